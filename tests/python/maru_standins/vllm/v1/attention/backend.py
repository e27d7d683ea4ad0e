"""Stand-in for vllm.v1.attention.backend."""


class AttentionMetadata:
    pass
