/*
 * libabtdisk - the disk model of abt_disk.h behind a C ABI, so Python (ctypes) can
 * drive it on a clock of its own: the model's unit tests (tests/disk) and the
 * predictions docs/device.md compares measurements with.
 */
#include <stdlib.h>
#include <string.h>

#include "abt_disk.h"

/* A disk of the named profile (fixed_ns > 0 overrides the profile's fixed cost,
 * cache < 0 keeps its cache, >= 0 sets it in bytes); NULL for an unknown name or
 * inconsistent parameters. */
struct abt_disk *abtd_open(const char *name, unsigned long long fixed_ns, long long cache)
{
    const struct abt_disk_params *p = abt_disk_profile(name);
    if (!p) return NULL;
    struct abt_disk_params q = *p;
    if (fixed_ns) q.fixed_ns = fixed_ns;
    if (cache >= 0) q.cache_bytes = (abt_u64)cache;
    struct abt_disk *d = malloc(sizeof *d);
    if (d && abt_disk_init(d, &q) != 0) {
        free(d);
        return NULL;
    }
    return d;
}

void abtd_close(struct abt_disk *d) { free(d); }

unsigned long long abtd_serve(struct abt_disk *d, int op, unsigned long long lba,
                              unsigned long long n, int fua, unsigned long long t)
{
    return abt_disk_serve(d, op, lba, n, fua, t);
}

unsigned long long abtd_seek_ns(struct abt_disk *d, unsigned long long dist)
{
    return abt_disk_seek_ns(d, dist);
}

/* A derived quantity or counter by name; ~0 for an unknown name. */
unsigned long long abtd_get(struct abt_disk *d, const char *key)
{
    struct { const char *k; abt_u64 v; } t[] = {
        {"rev_ns", d->rev_ns}, {"tracks", d->tracks}, {"zones", d->nzones},
        {"spt_outer", d->zone[0].spt}, {"spt_inner", d->zone[d->nzones - 1].spt},
        {"inner_lba", d->zone[d->nzones - 1].start_lba},
        {"sectors", d->p.sectors}, {"cache_bytes", d->p.cache_bytes},
        {"outer_Bps", d->p.outer_Bps}, {"inner_Bps", d->p.inner_Bps},
        {"iface_Bps", d->p.iface_Bps}, {"overhead_ns", d->p.overhead_ns},
        {"seek_t2t_ns", d->p.seek_t2t_ns}, {"seek_avg_ns", d->p.seek_avg_ns},
        {"seek_full_ns", d->p.seek_full_ns}, {"idle_ns", d->p.idle_ns},
        {"flush_ns", d->p.flush_ns}, {"fixed_ns", d->p.fixed_ns}, {"depth", d->p.depth},
        {"busy_until", d->busy_until}, {"dirty_sectors", d->dirty_sectors},
        {"ndirty", d->ndirty}, {"requests", d->requests}, {"flushes", d->flushes},
        {"positionings", d->positionings}, {"destages", d->destages},
        {"media_ns", d->media_ns}, {"head_lba", d->head_lba},
    };
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].k, key)) return t[i].v;
    return ~0ull;
}
