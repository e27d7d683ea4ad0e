"""Stand-in for vllm.v1.core.sched.output."""


class SchedulerOutput:
    pass
