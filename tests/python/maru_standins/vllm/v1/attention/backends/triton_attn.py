"""Stand-in: the Triton backend's metadata type (layout
[num_blocks, num_kv_heads, block_size, head_dim])."""


class TritonAttentionMetadata:
    pass
