/* The libbpf side of tests/test_heldout_tools.py and tests/test_progtypes.py: for each program of
 * OBJ (or only the programs named after it), open OBJ afresh, leave every other program's
 * autoload off, load, and print one JSON line:
 *   {"prog", "section", "loaded", "errno" (name, or null), "type", "expected_attach_type",
 *    "insns" (bpf_program__insn_cnt), "xlated" (instructions as the kernel reports them),
 *    "attach_btf_id", "message" (the verifier's last line, else libbpf's first warning)}
 * One bpf_object per program, so that a program the kernel refuses hides no other. libbpf's own
 * messages go to stderr as well. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static char last_warning[1024];
static int in_log; /* between libbpf's BEGIN and END PROG LOAD LOG lines */
static char last_log_line[1024];

static void keep_line(char *dst, size_t size, const char *text)
{
	size_t n = strcspn(text, "\n");

	if (n >= size)
		n = size - 1;
	memcpy(dst, text, n);
	dst[n] = '\0';
}

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char line[4096];
	va_list copy;

	va_copy(copy, args);
	vfprintf(stderr, fmt, copy);
	va_end(copy);
	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, args);
	if (strstr(line, "Retrying without BTF"))
		return 0;
	if (strstr(line, "-- BEGIN PROG LOAD LOG --")) {
		in_log = 1;
		last_log_line[0] = '\0';
		return 0;
	}
	if (strstr(line, "-- END PROG LOAD LOG --")) {
		in_log = 0;
		keep_line(last_warning, sizeof(last_warning), last_log_line);
		return 0;
	}
	if (in_log) {
		/* the log comes in one piece or line by line: keep its last non-empty line */
		char *start = line, *nl;

		while ((nl = strchr(start, '\n')) && nl[1] != '\0')
			start = nl + 1;
		if (*start && *start != '\n')
			keep_line(last_log_line, sizeof(last_log_line), start);
		return 0;
	}
	/* the first warning names the reason; the later ones only repeat the error number */
	if (!last_warning[0])
		keep_line(last_warning, sizeof(last_warning), line);
	return 0;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* errno names, with the kernel's own ENOTSUPP (524), which glibc has no name for */
static const char *errno_name(int err)
{
	if (err == 524)
		return "ENOTSUPP";
	return strerrorname_np(err) ? strerrorname_np(err) : "?";
}

static int wanted(const char *name, int argc, char **argv)
{
	int i;

	if (argc <= 2)
		return 1;
	for (i = 2; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

/* load program number INDEX of PATH alone; 0 when there is no such program */
static int load_one(const char *path, int index)
{
	struct bpf_program *prog, *target = NULL;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_object *obj;
	int i = 0, err, fd;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		printf("{\"open_error\":");
		json_string(errno_name(errno));
		printf("}\n");
		return -1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (i++ == index)
			target = prog;
		else
			bpf_program__set_autoload(prog, false);
	}
	if (!target) {
		bpf_object__close(obj);
		return 0;
	}
	last_warning[0] = '\0';
	in_log = 0;
	err = bpf_object__load(obj);
	fd = bpf_program__fd(target);
	printf("{\"prog\":");
	json_string(bpf_program__name(target));
	printf(",\"section\":");
	json_string(bpf_program__section_name(target));
	printf(",\"loaded\":%s,\"errno\":", err == 0 && fd >= 0 ? "true" : "false");
	if (err)
		json_string(errno_name(-err));
	else
		printf("null");
	printf(",\"type\":%d,\"expected_attach_type\":%d,\"insns\":%zu", bpf_program__type(target),
	       bpf_program__expected_attach_type(target), bpf_program__insn_cnt(target));
	if (err == 0 && fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		printf(",\"xlated\":%u,\"attach_btf_id\":%u", info.xlated_prog_len / 8, info.attach_btf_id);
	else
		printf(",\"xlated\":null,\"attach_btf_id\":null");
	printf(",\"message\":");
	json_string(err ? last_warning : "");
	printf("}\n");
	bpf_object__close(obj);
	return 1;
}

int main(int argc, char **argv)
{
	struct bpf_program *prog;
	struct bpf_object *obj;
	int index = 0, n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OBJ [PROG...]\n", argv[0]);
		return 2;
	}
	libbpf_set_print(print_fn);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		printf("{\"open_error\":");
		json_string(errno_name(errno));
		printf("}\n");
		return 1;
	}
	n = 0;
	bpf_object__for_each_program(prog, obj)
		n++;
	for (index = 0; index < n; index++) {
		const char *name = NULL;
		int i = 0;

		bpf_object__for_each_program(prog, obj)
			if (i++ == index)
				name = bpf_program__name(prog);
		if (wanted(name, argc, argv) && load_one(argv[1], index) < 0)
			return 1;
	}
	bpf_object__close(obj);
	return 0;
}
