/* A C string as a JSON string, for the runners of the tests that print JSON lines. */
#ifndef EVSPEC_TESTS_JSON_STRING_H
#define EVSPEC_TESTS_JSON_STRING_H

#include <stdio.h>

static void put_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

#endif
