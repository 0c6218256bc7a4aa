/* varswork.c - calls getppid() argv[1] times (default 100): the workload of the var: and
 * --dump-maps tests; its comm, "varswork", is what their program filters on. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}
