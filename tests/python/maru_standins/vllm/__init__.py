"""A stand-in for vLLM, as much as Maru's maru_vllm imports
(tests/python/test_maru_integrations.py): not vLLM."""
