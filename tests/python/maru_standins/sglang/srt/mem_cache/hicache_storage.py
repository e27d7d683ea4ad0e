"""Stand-in for sglang.srt.mem_cache.hicache_storage: the HiCacheStorage
base class as Maru's MaruStorage uses it (register_mem_pool_host keeps
the host memory pool as self.mem_pool_host)."""


class HiCacheStorage:
    def register_mem_pool_host(self, mem_pool_host) -> None:
        self.mem_pool_host = mem_pool_host
