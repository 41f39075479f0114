/* The profile's JSON (docs/profile.md): the header (session, program, host, MPI library,
 * control file), the totals per layer and the files' array (profile_file.c); the records are
 * merged in profile_build.c. */
#include "output/profile.h"

#include <string.h>
#include <unistd.h>

#include "adapt/adapt.h"
#include "base/env.h"
#include "base/real.h"
#include "config/json.h"
#include "core/abi.h"
#include "core/core.h"
#include "output/profile_file.h"
#include "platform/h5api.h"

static void write_argv(FILE *f)
{
    fputs("[", f);
    FILE *cmd = iot_real_fopen("/proc/self/cmdline", "r");
    if (!cmd) {
        fputs("]", f);
        return;
    }
    char arg[4096];
    int n = 0, c, len = 0;
    while ((c = fgetc(cmd)) != EOF) {
        if (c && len < (int)sizeof arg - 1) {
            arg[len++] = (char)c;
            continue;
        }
        if (c)
            continue;
        arg[len] = '\0';
        fputs(n++ ? ", " : "", f);
        iot_json_string(f, arg);
        len = 0;
    }
    iot_real_fclose(cmd);
    fputs("]", f);
}

/* "hosts": {"count": N, "names": [...]}: the first IOT_HOSTS_LISTED names, sorted (the count is
 * what readers need; the names say where, for a person) */
static void write_hosts(FILE *f, const iot_hosts *h)
{
    if (!h || h->count <= 0) {
        fputs(", \"hosts\": null", f);
        return;
    }
    fprintf(f, ", \"hosts\": {\"count\": %d, \"names\": [", h->count);
    for (int i = 0; i < h->listed && i < IOT_HOSTS_LISTED; i++) {
        char name[IOT_HOST_LEN + 1];
        memcpy(name, h->names[i], IOT_HOST_LEN);
        name[IOT_HOST_LEN] = '\0';
        fputs(i ? ", " : "", f);
        iot_json_string(f, name);
    }
    fputs("]}", f);
}

void iot_profile_write(FILE *f, const iot_profile *p, const iot_profile_meta *m)
{
    /* session, mpi and io first: output.c reads them back to compare profiles of one run */
    fputs("{\"schema\": \"iotune-profile\", \"version\": 1, \"session\": ", f);
    iot_json_string(f, m->session);
    fprintf(f,
            ", \"mpi\": %s, \"reduced\": %s, \"ranks\": %d, \"io\": {\"time_s\": %.9f, "
            "\"bytes_written\": %llu, \"bytes_read\": %llu}, \"program\": ",
            m->mpi ? "true" : "false", m->reduced ? "true" : "false", p->nranks, p->io_time,
            (unsigned long long)p->bytes_written, (unsigned long long)p->bytes_read);
    extern char *program_invocation_name;
    iot_json_string(f, program_invocation_name);
    fputs(", \"argv\": ", f);
    write_argv(f);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fputs(", \"hostname\": ", f);
    iot_json_string(f, host);
    char cwd[4096]; /* what the files' relative names are relative to (advise finds them) */
    fputs(", \"cwd\": ", f);
    iot_json_string(f, getcwd(cwd, sizeof cwd) ? cwd : NULL);
    write_hosts(f, m->hosts);
    fprintf(f, ", \"start\": %.6f, \"wall_s\": %.9f, ", m->epoch, m->wall);
    const iot_mpi_impl_t *mpi = &iot_mpi_impl; /* read by the tuner: which hints can matter */
    fputs("\"mpi_library\": {\"family\": ", f);
    iot_json_string(f, mpi->family);
    fputs(", \"library\": ", f);
    iot_json_string(f, m->mpi && mpi->library[0] ? mpi->library : NULL);
    if (mpi->version > 0)
        fprintf(f, ", \"standard\": \"%d.%d\"", mpi->version, mpi->subversion);
    else
        fputs(", \"standard\": null", f);
    fputs(", \"io_component\": ", f);
    iot_json_string(f, mpi->io);
    fputs(", \"io_component_from\": ", f);
    iot_json_string(f, mpi->io_from);
    fprintf(f, ", \"hints_verifiable\": %s}, ", mpi->echoes ? "false" : "true");
    unsigned h5v[3];
    int h5par = 0; /* the HDF5 the process used (docs/hdf5-versions.md), null without one */
    if (iot_h5_seen(h5v, &h5par))
        fprintf(f, "\"hdf5_library\": {\"version\": \"%u.%u.%u\", \"parallel\": %s}, ", h5v[0],
                h5v[1], h5v[2], h5par ? "true" : "false");
    else
        fputs("\"hdf5_library\": null, ", f);
    const iot_settings *s = &iot_g.settings;
    fputs("\"config\": {\"path\": ", f);
    iot_json_string(f, iot_env.config_name);
    fputs(", \"digest\": ", f);
    iot_json_string(f, s->digest[0] ? s->digest : NULL);
    fputs(", \"settings\": ", f);
    iot_json_settings(f, s);
    fputs("}, ", f);
    iot_adapt_write_json(f);
    fputs("\"layers\": {", f);
    for (int l = 0; l < IOT_NLAYERS; l++) {
        fprintf(f, "%s\"%s\": ", l ? ", " : "", layer_names[l]);
        write_counters(f, (iot_clayer)l, &p->total.c[l]);
    }
    fputs("}, \"files\": [", f);
    for (int k = 0; k < p->nfiles; k++)
        write_file(f, &p->files[k], k == 0);
    fputc(']', f);
    if (p->summary) { /* more files of one rank each than rank 0 takes: summed, counted */
        const iot_reduced *sum = p->summary;
        fprintf(f, ", \"files_summarised\": {\"files\": %llu", (unsigned long long)sum->files);
        for (int l = 0; l < IOT_NLAYERS; l++) {
            if (!(sum->rec.layers & (1 << l)))
                continue;
            fprintf(f, ", \"%s\": ", layer_names[l]);
            write_counters(f, (iot_clayer)l, &sum->rec.c[l]);
        }
        fputc('}', f);
    }
    fputs("}\n", f);
}
