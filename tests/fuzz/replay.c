/* Runs every file given (or every file of every folder given) once through the harness's
 * LLVMFuzzerTestOneInput: the corpus and the regression inputs under CTest, with the normal
 * compiler, where clang and libFuzzer are absent. Exits 0 when all ran (a failed check
 * aborts), 2 when a file cannot be read or nothing was run. */
#include <dirent.h>
#include <sys/stat.h>

#include "check.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fprintf(stderr, "replay: cannot read %s\n", path), -1;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    if (!buf)
        return fprintf(stderr, "replay: out of memory on %s\n", path), -1;
    /* an exact-size copy: ASan sees any read past the input's end */
    char *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput((const uint8_t *)exact, n);
    free(exact);
    return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    int runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            return fprintf(stderr, "replay: no such file or folder %s\n", argv[i]), 2;
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) < 0)
                return 2;
            runs++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, by_name);
        if (n < 0)
            return fprintf(stderr, "replay: cannot list %s\n", argv[i]), 2;
        for (int j = 0; j < n; j++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[j]->d_name);
            if (names[j]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(path) < 0)
                    return 2;
                runs++;
            }
            free(names[j]);
        }
        free(names);
    }
    printf("replay: %d inputs ran\n", runs);
    return runs > 0 ? 0 : 2;
}
