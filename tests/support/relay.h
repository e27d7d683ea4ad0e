/*
 * relay.h -- test support: a byte relay on a unix socket, as `socat
 * UNIX-LISTEN:A,fork UNIX-CONNECT:B` would be: another process between
 * handler and metaserver, so that the server's peer on the ipc socket is
 * not the handler. Each connection accepted on listen_path is served by a
 * process of its own (forked per connection), which connects to
 * server_path and copies bytes both ways until either side closes, then
 * exits -- so at a metaserver restart the relay process a handler spoke
 * through is gone. Never asserts.
 */
#ifndef CXLP_TEST_RELAY_H
#define CXLP_TEST_RELAY_H

#include <sys/types.h>

/* relay_spawn -- fork the relay (it listens before this returns). Returns
 * its pid, or -1 (errno set). The relay's children use no nng, no malloc
 * and no stdio: safe to fork from a process that has nng threads. */
pid_t relay_spawn(const char *listen_path, const char *server_path);

/* relay_kill -- kill the relay (its connections' processes end with
 * their connections, or with the server) and reap it; unlink
 * listen_path. */
void relay_kill(pid_t pid, const char *listen_path);

#endif /* CXLP_TEST_RELAY_H */
