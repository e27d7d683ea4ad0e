"""Stand-in for vllm.utils.hashing: a deterministic hash."""

import hashlib


def safe_hash(data: bytes, usedforsecurity: bool = True):
    return hashlib.sha256(data, usedforsecurity=usedforsecurity)
