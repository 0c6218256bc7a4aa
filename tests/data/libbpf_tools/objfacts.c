/* libbpf's view of BPF objects, opened and never loaded: per object one JSON line with its
 * programs (name, section, program type, expected attach type, flags, autoload, instructions),
 * its maps (name, type, key/value size and BTF type, the members of a struct value, max_entries,
 * flags, internal or not), the variables of its BTF data sections (.rodata, .data, .bss, ...)
 * and the names of the structs its BTF describes.
 * tests/test_libbpf_tools_facts.py builds it against the sid chroot's libbpf (1.7) and checks
 * tests/data/libbpf_tools/objects.json against it.
 *
 *   objfacts OBJ.bpf.o...
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "json_string.h"

static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level, (void)fmt, (void)args;
	return 0;
}

/* "struct event", "int", "char[16]", "u32" (typedefs by their own name), const/volatile dropped */
static void type_name(const struct btf *btf, __u32 id, char *out, size_t size)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_const(t) || btf_is_volatile(t) || btf_is_restrict(t) || btf_is_type_tag(t))) {
		id = t->type;
		t = btf__type_by_id(btf, id);
	}
	if (!t || id == 0) {
		snprintf(out, size, "void");
		return;
	}
	const char *name = btf__name_by_offset(btf, t->name_off);
	if (btf_is_array(t)) {
		char inner[128];
		type_name(btf, btf_array(t)->type, inner, sizeof(inner));
		snprintf(out, size, "%s[%u]", inner, btf_array(t)->nelems);
	} else if (btf_is_ptr(t)) {
		char inner[128];
		type_name(btf, t->type, inner, sizeof(inner));
		snprintf(out, size, "%s *", inner);
	} else if (btf_is_struct(t)) {
		snprintf(out, size, "struct %s", name);
	} else if (btf_is_union(t)) {
		snprintf(out, size, "union %s", name);
	} else if (btf_is_enum(t) || btf_is_enum64(t)) {
		snprintf(out, size, "enum %s", name);
	} else {
		snprintf(out, size, "%s", name);
	}
}

static void put_type(const struct btf *btf, __u32 id)
{
	char name[256];

	if (!btf || id == 0) {
		printf("null");
		return;
	}
	type_name(btf, id, name, sizeof(name));
	put_str(name);
}

static const struct btf_type *skip_mods(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t;
}

static void put_members(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf && id ? skip_mods(btf, id) : NULL;

	if (!t || !btf_is_struct(t)) {
		printf("null");
		return;
	}
	printf("[");
	const struct btf_member *m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		printf("%s{\"name\":", i ? "," : "");
		put_str(btf__name_by_offset(btf, m->name_off));
		printf(",\"type\":");
		put_type(btf, m->type);
		printf("}");
	}
	printf("]");
}

static void structs(const struct btf *btf)
{
	const char *sep = "";

	printf(",\"structs\":[");
	for (__u32 id = 1; btf && id < btf__type_cnt(btf); id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name = btf__name_by_offset(btf, t->name_off);
		if (btf_is_struct(t) && name && *name) {
			printf("%s", sep);
			put_str(name);
			sep = ",";
		}
	}
	printf("]");
}

static void programs(struct bpf_object *obj)
{
	struct bpf_program *prog;
	const char *sep = "";

	printf("\"programs\":[");
	bpf_object__for_each_program(prog, obj) {
		printf("%s{\"name\":", sep);
		put_str(bpf_program__name(prog));
		printf(",\"section\":");
		put_str(bpf_program__section_name(prog));
		printf(",\"type\":");
		put_str(libbpf_bpf_prog_type_str(bpf_program__type(prog)));
		printf(",\"attach_type\":");
		put_str(libbpf_bpf_attach_type_str(bpf_program__expected_attach_type(prog)));
		printf(",\"flags\":%u,\"autoload\":%s,\"insns\":%zu}", bpf_program__flags(prog),
		       bpf_program__autoload(prog) ? "true" : "false", bpf_program__insn_cnt(prog));
		sep = ",";
	}
	printf("]");
}

static void maps(struct bpf_object *obj, const struct btf *btf)
{
	struct bpf_map *map;
	const char *sep = "";

	printf(",\"maps\":[");
	bpf_object__for_each_map(map, obj) {
		printf("%s{\"name\":", sep);
		put_str(bpf_map__name(map));
		printf(",\"type\":");
		put_str(libbpf_bpf_map_type_str(bpf_map__type(map)));
		printf(",\"key_size\":%u,\"value_size\":%u,\"max_entries\":%u,\"flags\":%u,\"internal\":%s,\"key\":",
		       bpf_map__key_size(map), bpf_map__value_size(map), bpf_map__max_entries(map),
		       bpf_map__map_flags(map), bpf_map__is_internal(map) ? "true" : "false");
		put_type(btf, bpf_map__btf_key_type_id(map));
		printf(",\"value\":");
		put_type(btf, bpf_map__btf_value_type_id(map));
		printf(",\"value_members\":");
		put_members(btf, bpf_map__btf_value_type_id(map));
		printf("}");
		sep = ",";
	}
	printf("]");
}

static void variables(const struct btf *btf)
{
	const char *sep = "";

	printf(",\"datasecs\":{");
	for (__u32 id = 1; btf && id < btf__type_cnt(btf); id++) {
		const struct btf_type *sec = btf__type_by_id(btf, id);
		if (!btf_is_datasec(sec))
			continue;
		printf("%s", sep);
		put_str(btf__name_by_offset(btf, sec->name_off));
		printf(":[");
		const struct btf_var_secinfo *vi = btf_var_secinfos(sec);
		for (__u16 i = 0; i < btf_vlen(sec); i++, vi++) {
			const struct btf_type *var = btf__type_by_id(btf, vi->type);
			printf("%s{\"name\":", i ? "," : "");
			put_str(btf__name_by_offset(btf, var->name_off));
			printf(",\"type\":");
			put_type(btf, btf_is_var(var) ? var->type : vi->type);
			printf(",\"offset\":%u,\"size\":%u}", vi->offset, vi->size);
		}
		printf("]");
		sep = ",";
	}
	printf("}");
}

int main(int argc, char **argv)
{
	int status = 0;

	libbpf_set_print(quiet);
	for (int i = 1; i < argc; i++) {
		struct bpf_object *obj = bpf_object__open_file(argv[i], NULL);
		printf("{\"object\":");
		put_str(argv[i]);
		if (!obj) {
			printf(",\"error\":");
			put_str(strerror(errno));
			printf("}\n");
			status = 1;
			continue;
		}
		const struct btf *btf = bpf_object__btf(obj);
		printf(",");
		programs(obj);
		maps(obj, btf);
		variables(btf);
		structs(btf);
		printf("}\n");
		bpf_object__close(obj);
	}
	return status;
}
