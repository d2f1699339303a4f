/* busy_procs.h - busy processes for the worker pool's test and benchmark: CPU-bound
 * children that compete with the pool's threads for the cores, as other programs on a
 * student's laptop or a shared server do. They die with their parent, or after
 * `max_seconds` if something keeps it from stopping them.
 */
#ifndef GD_TEST_BUSY_PROCS_H
#define GD_TEST_BUSY_PROCS_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define BUSY_MAX 64

static pid_t busy_pids[BUSY_MAX];
static int nbusy;

static void busy_start(int n, unsigned max_seconds)
{
    for (int i = 0; i < n && nbusy < BUSY_MAX; i++) {
        pid_t pid = fork();
        if (pid == 0) {
#ifdef __linux__
            prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
            alarm(max_seconds);
            volatile unsigned long x = 0;
            for (;;) x++;
        }
        if (pid > 0) busy_pids[nbusy++] = pid;
    }
}

static void busy_stop(void)
{
    for (int i = 0; i < nbusy; i++) kill(busy_pids[i], SIGKILL);
    for (int i = 0; i < nbusy; i++) waitpid(busy_pids[i], NULL, 0);
    nbusy = 0;
}

#endif /* GD_TEST_BUSY_PROCS_H */
