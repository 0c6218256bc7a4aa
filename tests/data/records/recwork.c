/* recwork.c - the workload of tests/test_records_libbpf.py: does ACTIONs in order, then writes the
 * pids it knows to the file $RECWORK_PIDS, one a line: its own, its parent's, then each child's in
 * the order they were made. It prints nothing (what it writes to its stdout would depend on what
 * that is).
 *
 *   recwork [getppid N | spin MS | exec N | kill | open PATH | stat PATH | mount | tcp]...
 *
 * getppid N: N getppid() calls; spin MS: MS milliseconds of CPU time; exec N: N children, one after
 * the other, each running /bin/true; kill: a child that waits for a signal, sent SIGTERM; open PATH:
 * opens PATH for reading and closes it; stat PATH: stat() and statfs() of PATH; mount: a mount()
 * and a umount() of a directory that does not exist (both fail); tcp: a TCP connection over the
 * loopback to a listener of its own, 100 bytes sent each way, closed by the connecting side first. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 64

static pid_t children[MAX_CHILDREN];
static int nchildren;

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void tcp(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	char bytes[100] = { 0 };
	int listener = socket(AF_INET, SOCK_STREAM, 0), client = socket(AF_INET, SOCK_STREAM, 0), server;

	if (bind(listener, (struct sockaddr *)&addr, len) || listen(listener, 1) ||
	    getsockname(listener, (struct sockaddr *)&addr, &len) ||
	    connect(client, (struct sockaddr *)&addr, len))
		exit(2);
	server = accept(listener, NULL, NULL);
	if (server < 0 || write(client, bytes, sizeof(bytes)) != sizeof(bytes) ||
	    read(server, bytes, sizeof(bytes)) != sizeof(bytes) ||
	    write(server, bytes, sizeof(bytes)) != sizeof(bytes) ||
	    read(client, bytes, sizeof(bytes)) != sizeof(bytes))
		exit(2);
	close(client);
	read(server, bytes, sizeof(bytes)); /* the end of the stream */
	close(server);
	close(listener);
}

static pid_t child(void)
{
	pid_t pid = fork();

	if (pid < 0 || nchildren == MAX_CHILDREN)
		exit(2);
	if (pid > 0)
		children[nchildren++] = pid;
	return pid;
}

int main(int argc, char **argv)
{
	const char *out = getenv("RECWORK_PIDS");
	char line[32];
	int i, fd;

	for (i = 1; i < argc; i++) {
		const char *arg = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(argv[i], "getppid")) {
			for (long n = atol(arg); n > 0; n--)
				getppid();
			i++;
		} else if (!strcmp(argv[i], "spin")) {
			double end = cpu_ms() + atol(arg);

			while (cpu_ms() < end)
				;
			i++;
		} else if (!strcmp(argv[i], "exec")) {
			for (long n = atol(arg); n > 0; n--) {
				if (child() == 0) {
					execl("/bin/true", "true", (char *)NULL);
					_exit(127);
				}
				waitpid(children[nchildren - 1], NULL, 0);
			}
			i++;
		} else if (!strcmp(argv[i], "kill")) {
			if (child() == 0) {
				for (;;)
					pause();
			}
			kill(children[nchildren - 1], SIGTERM);
			waitpid(children[nchildren - 1], NULL, 0);
		} else if (!strcmp(argv[i], "open")) {
			fd = open(arg, O_RDONLY);
			if (fd >= 0)
				close(fd);
			i++;
		} else if (!strcmp(argv[i], "stat")) {
			struct stat st;
			struct statfs sfs;

			stat(arg, &st);
			statfs(arg, &sfs);
			i++;
		} else if (!strcmp(argv[i], "mount")) {
			mount("recwork", "/nonexistent/recwork", "tmpfs", MS_RDONLY, "size=1m");
			umount("/nonexistent/recwork");
		} else if (!strcmp(argv[i], "tcp")) {
			tcp();
		} else {
			return 2;
		}
	}
	if (!out)
		return 2;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	snprintf(line, sizeof(line), "%d\n%d\n", getpid(), getppid());
	write(fd, line, strlen(line));
	for (i = 0; i < nchildren; i++) {
		snprintf(line, sizeof(line), "%d\n", children[i]);
		write(fd, line, strlen(line));
	}
	return close(fd) ? 2 : 0;
}
