/* The libbpf side of tests/test_libbpf_semantics.py and tests/test_reader_review.py: open OBJ
 * (maps pinned by name under PIN_ROOT), set the map_extra of each map named in a NAME=VALUE
 * argument (bpf_map__set_map_extra, 64 bits), load it, and print one JSON line for the verdict,
 * then one per map and program as BPF_OBJ_GET_INFO_BY_FD describes them, with the programs or maps
 * held in each PROG_ARRAY and map-in-map and the contents of global data maps, then one per
 * variable of each DATASEC in the BTF libbpf loaded, with its linkage. libbpf's own messages go
 * to stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

static void print_slots(int fd, const struct bpf_map_info *info)
{
	const char *sep = "";
	__u32 key;

	printf(",\"slots\":[");
	for (key = 0; key < info->max_entries && key < 64; key++) {
		char name[BPF_OBJ_NAME_LEN + 1] = "?";
		__u32 id, len;
		int held;

		if (bpf_map_lookup_elem(fd, &key, &id))
			continue;
		if (info->type == BPF_MAP_TYPE_PROG_ARRAY) {
			struct bpf_prog_info pi = {};

			held = bpf_prog_get_fd_by_id(id);
			len = sizeof(pi);
			if (held >= 0 && !bpf_obj_get_info_by_fd(held, &pi, &len))
				snprintf(name, sizeof(name), "%s", pi.name);
		} else {
			struct bpf_map_info mi = {};

			held = bpf_map_get_fd_by_id(id);
			len = sizeof(mi);
			if (held >= 0 && !bpf_obj_get_info_by_fd(held, &mi, &len))
				snprintf(name, sizeof(name), "%s", mi.name);
		}
		if (held >= 0)
			close(held);
		printf("%s[%u,\"%s\"]", sep, key, name);
		sep = ",";
	}
	printf("]");
}

static void print_value(int fd, const struct bpf_map_info *info)
{
	unsigned char *value = calloc(1, info->value_size);
	__u32 key = 0, i;

	if (value && !bpf_map_lookup_elem(fd, &key, value)) {
		printf(",\"value\":\"");
		for (i = 0; i < info->value_size; i++)
			printf("%02x", value[i]);
		printf("\"");
	}
	free(value);
}

static void print_vars(const struct btf *btf)
{
	__u32 id, n = btf ? btf__type_cnt(btf) : 0;

	for (id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_var_secinfo *vsi = btf_var_secinfos(t);
		int i;

		if (!btf_is_datasec(t))
			continue;
		for (i = 0; i < btf_vlen(t); i++, vsi++) {
			const struct btf_type *v = btf__type_by_id(btf, vsi->type);

			if (btf_is_var(v))
				printf("{\"var\":\"%s\",\"datasec\":\"%s\",\"linkage\":%u}\n",
				       btf__name_by_offset(btf, v->name_off),
				       btf__name_by_offset(btf, t->name_off), btf_var(v)->linkage);
		}
	}
}

int main(int argc, char **argv)
{
	const char *pin_root = argc > 2 && !strchr(argv[2], '=') ? argv[2] : NULL;
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = pin_root);
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err, i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OBJ [PIN_ROOT] [MAP=MAP_EXTRA]...\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], &opts);
	if (!obj) {
		printf("{\"ok\":false,\"stage\":\"open\",\"errno\":%d}\n", errno);
		return 0;
	}
	for (i = pin_root ? 3 : 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (eq)
			*eq = 0;
		map = eq ? bpf_object__find_map_by_name(obj, argv[i]) : NULL;
		if (!map || bpf_map__set_map_extra(map, strtoull(eq + 1, NULL, 0))) {
			fprintf(stderr, "cannot set map_extra of map '%s'\n", argv[i]);
			return 2;
		}
	}
	err = bpf_object__load(obj);
	if (err) {
		printf("{\"ok\":false,\"stage\":\"load\",\"errno\":%d}\n", -err);
		bpf_object__close(obj);
		return 0;
	}
	printf("{\"ok\":true}\n");
	bpf_object__for_each_map(map, obj) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_map__fd(map);

		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		printf("{\"map\":\"%s\",\"id\":%u,\"type\":%u,\"key_size\":%u,\"value_size\":%u,"
		       "\"max_entries\":%u,\"flags\":%u,\"map_extra\":%llu,\"btf_key\":%u,\"btf_value\":%u",
		       info.name, info.id, info.type, info.key_size, info.value_size, info.max_entries,
		       info.map_flags, (unsigned long long)info.map_extra, info.btf_key_type_id,
		       info.btf_value_type_id);
		if (info.type == BPF_MAP_TYPE_PROG_ARRAY || info.type == BPF_MAP_TYPE_ARRAY_OF_MAPS ||
		    info.type == BPF_MAP_TYPE_HASH_OF_MAPS)
			print_slots(fd, &info);
		if (bpf_map__is_internal(map))
			print_value(fd, &info);
		printf("}\n");
	}
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		printf("{\"prog\":\"%s\",\"id\":%u,\"type\":%u,\"btf_id\":%u}\n", info.name, info.id,
		       info.type, info.btf_id);
	}
	print_vars(bpf_object__btf(obj));
	bpf_object__close(obj);
	return 0;
}
