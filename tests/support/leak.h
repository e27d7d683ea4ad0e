/*
 * leak.h -- test support: leak_check(), LeakSanitizer's check made now
 * (non-zero when it found leaks, which it prints to stderr) in ASan
 * builds, 0 in the others. For a suite's .fini, after everything it
 * started is stopped.
 */
#ifndef CXLP_TEST_LEAK_H
#define CXLP_TEST_LEAK_H

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define leak_check() __lsan_do_recoverable_leak_check()
#else
#define leak_check() 0
#endif

#endif /* CXLP_TEST_LEAK_H */
