"""Stand-in: the MLA backends' common metadata type (layout
[num_pages, page_size, ...])."""


class MLACommonMetadata:
    pass
