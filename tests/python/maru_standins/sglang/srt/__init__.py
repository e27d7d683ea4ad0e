"""A stand-in for SGLang, as much as Maru's maru_sglang imports
(tests/python/test_maru_integrations.py): not SGLang."""
