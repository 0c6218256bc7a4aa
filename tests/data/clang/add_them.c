/* add_them.c - the workload of tracing_args.c's uprobe: add_them(40000, 2) once. */
#include <stdio.h>

__attribute__((noinline)) long add_them(long a, long b)
{
	__asm__ volatile("");
	return a + b;
}

int main(void)
{
	printf("%ld\n", add_them(40000, 2));
	return 0;
}
