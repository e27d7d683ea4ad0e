"""Stand-in for vLLM's KV connector base types."""

import enum


class KVConnectorRole(enum.Enum):
    SCHEDULER = 0
    WORKER = 1


class KVConnectorMetadata:
    pass


class KVConnectorBase_V1:
    def __init__(self, vllm_config=None, role=None, *args, **kwargs):
        self._vllm_config = vllm_config
        self._role = role
