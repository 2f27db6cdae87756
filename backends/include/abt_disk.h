/*
 * abt_disk.h - one disk model for every place abtlab emulates a disk: a 7200 rpm
 * SATA drive of the paper's era (or an SSD, or a fixed latency) as a function of
 * the requests it is given and a clock the caller gives, in ns. Deterministic:
 * the same requests at the same times give the same completion times.
 *
 * Header only, integer arithmetic only, no libc: it is #included by the FUSE disk
 * (native/slowdisk), by the ctypes library the tests load (native/disk) and can
 * be by a kernel block driver (define ABT_DISK_KERNEL first: u64 from linux/types).
 *
 * What it models (docs/device.md has the table with sources and the validation):
 * - geometry: LBA 0 is the outer edge; `zones` zones of equal track count, each
 *   with its sectors per track, so the media rate falls linearly from the outer to
 *   the inner zone; consecutive tracks are skewed by a track-to-track seek, so a
 *   long sequential transfer runs at the datasheet's sustained rate;
 * - seek by distance d (tracks, of T): t2t + c1 sqrt(x) + c2 x, x = (d-1)/(T-1),
 *   c1 and c2 chosen so that seek(1) = track-to-track, seek(T) = full stroke and
 *   the mean over uniformly random start and end tracks = the datasheet average;
 * - rotation from the clock: the platter's angle at time t is t mod one turn, a
 *   sector waits until it passes under the head;
 * - a volatile write cache: a write that fits completes at interface speed; the
 *   media works at the same time (two timelines: the interface and the head), writing
 *   dirty data back whenever it has nothing else to do, `idle_ns` after the data
 *   came in, in C-LOOK order from the head (the drive's own order, approximated), at
 *   most ABT_DISK_DESTAGE_MAX at a time; a write that does not fit waits for room; a
 *   FLUSH returns when the cache is clean; a FUA write goes to the media itself.
 *   Reads are served from the media (no read cache).
 * - `fixed_ns` > 0: every request and flush takes exactly that long (the guest's
 *   disk before this model, kept for comparison).
 * A request is served whole once the drive starts it; queue order (depth 1 or
 * NCQ) is the caller's, with abt_disk_pick() for the drive's choice.
 */
#ifndef ABT_DISK_H
#define ABT_DISK_H

#ifdef ABT_DISK_KERNEL
#include <linux/types.h>
typedef u64 abt_u64;
#else
typedef unsigned long long abt_u64;
#endif

#define ABT_DISK_SECTOR 512ull
#define ABT_DISK_MAX_ZONES 32
#define ABT_DISK_EXTENTS 256     /* dirty extents the cache tracks */
#define ABT_DISK_DESTAGE_MAX 2048ull   /* sectors written back at once (1 MiB) */

enum { ABT_DISK_READ = 0, ABT_DISK_WRITE = 1, ABT_DISK_FLUSH = 2 };

/* One drive's parameters. Times in ns, rates in bytes/s, sizes in bytes. */
struct abt_disk_params {
    const char *name;
    abt_u64 sectors;        /* capacity in 512-byte LBAs */
    abt_u64 rpm;            /* 0: no platter (flash): every access costs seek_avg_ns */
    abt_u64 zones;
    abt_u64 outer_Bps;      /* sustained media rate, outer zone (LBA 0) */
    abt_u64 inner_Bps;      /* sustained media rate, inner zone */
    abt_u64 iface_Bps;      /* host interface */
    abt_u64 seek_t2t_ns, seek_avg_ns, seek_full_ns;
    abt_u64 overhead_ns;    /* command overhead, every request */
    abt_u64 cache_bytes;    /* volatile write cache; 0 = write-through */
    abt_u64 idle_ns;        /* cached data waits this long before write-back */
    abt_u64 flush_ns;       /* fixed cost of a FLUSH beyond destaging */
    abt_u64 fixed_ns;       /* > 0: every request costs exactly this */
    abt_u64 depth;          /* commands the drive may reorder (1: in order, 31: NCQ) */
};

/*
 * The profiles. hdd7200: Seagate Barracuda 7200.12 ST3250318AS (250 GB, one of the
 * desktop 7200 rpm SATA drives of the paper's time). Sources, as in docs/device.md:
 *  capacity 488,397,168 LBAs, 8192 KB cache, NCQ queue depth 32: the drive's own
 *    identify data (hdparm -I ST3250318AS, firmware CC44);
 *  7200 rpm: 8.33 ms a turn; average seek 8.5 ms, sustained 125 MB/s at the outer
 *    zone: Barracuda 7200.12 product manual; SATA 3.0 Gb/s = 300 MB/s interface;
 *  track-to-track 1.0 ms and full stroke 20.0 ms (read, typical): Hitachi 7K320
 *    OEM specification, a 7200 rpm desktop SATA drive of the same years (the
 *    7200.12 manual gives only the average);
 *  estimates, no datasheet gives them: inner-zone rate 65 MB/s (0.52 x outer, the
 *    recording band's radius ratio), command overhead 0.1 ms, idle 1 ms before
 *    background destaging; Linux's NCQ depth 31.
 */
static const struct abt_disk_params abt_disk_profiles[] = {
    {"hdd7200", 488397168ull, 7200, 16, 125000000ull, 65000000ull, 300000000ull,
     1000000ull, 8500000ull, 20000000ull, 100000ull, 8192ull * 1024, 1000000ull, 0, 0, 31},
    {"hdd7200-nocache", 488397168ull, 7200, 16, 125000000ull, 65000000ull, 300000000ull,
     1000000ull, 8500000ull, 20000000ull, 100000ull, 0, 1000000ull, 0, 0, 31},
    /* Samsung 860 EVO 500 GB datasheet: 520 MB/s sequential write, SATA 6 Gb/s;
     * 4 KiB QD1 random 42k write / 10k read IOPS -> 24-100 us an access: 60 us;
     * flush 1 ms, an estimate for consumer SSDs without power-loss protection. */
    {"ssd-sata", 976773168ull, 0, 1, 520000000ull, 520000000ull, 600000000ull,
     60000ull, 60000ull, 60000ull, 0, 0, 1000000ull, 1000000ull, 0, 31},
    /* every request and flush 12.67 ms (8.5 ms seek + 4.17 ms half turn): the guests'
     * disk before this model; fixed_ns is set by the caller (fixed:12.67ms) */
    {"fixed", 488397168ull, 0, 1, 125000000ull, 125000000ull, 300000000ull,
     0, 0, 0, 0, 0, 0, 0, 12670000ull, 1},
};
#define ABT_DISK_NPROFILES (sizeof abt_disk_profiles / sizeof abt_disk_profiles[0])

struct abt_disk_zone {
    abt_u64 start_lba, start_track, tracks;
    abt_u64 spt;    /* sectors per track */
    abt_u64 skew;   /* sectors a track starts later than the one before: one switch */
};

struct abt_disk_extent {
    abt_u64 lba, n, ready;   /* ready: when it may be written back */
};

struct abt_disk {
    struct abt_disk_params p;
    /* derived */
    abt_u64 rev_ns, tracks, nzones, c1, c2;
    struct abt_disk_zone zone[ABT_DISK_MAX_ZONES];
    /* state */
    abt_u64 head_track, head_lba;
    abt_u64 busy_until;      /* the interface: the last command's completion */
    abt_u64 media_until;     /* the head: when its current work ends */
    struct abt_disk_extent dirty[ABT_DISK_EXTENTS];
    abt_u64 ndirty, dirty_sectors;
    /* counters */
    abt_u64 requests, flushes, destages, media_ns;
    abt_u64 positionings;   /* seeks beyond the next track (flash: every access) */
};

static inline abt_u64 abt_disk_min(abt_u64 a, abt_u64 b) { return a < b ? a : b; }

static inline abt_u64 abt_disk_isqrt(abt_u64 x)
{
    abt_u64 r = 0, bit = 1ull << 62;
    while (bit > x) bit >>= 2;
    while (bit) {
        if (x >= r + bit) { x -= r + bit; r = (r >> 1) + bit; }
        else r >>= 1;
        bit >>= 2;
    }
    return r;
}

static inline const struct abt_disk_params *abt_disk_profile(const char *name)
{
    for (unsigned i = 0; i < ABT_DISK_NPROFILES; i++) {
        const char *a = abt_disk_profiles[i].name, *b = name;
        while (*a && *a == *b) { a++; b++; }
        if (!*a && !*b) return &abt_disk_profiles[i];
    }
    return 0;
}

/* Sustained media rate of zone z (linear from outer to inner). */
static inline abt_u64 abt_disk_zone_Bps(const struct abt_disk_params *p, abt_u64 z)
{
    if (p->zones <= 1) return p->outer_Bps;
    return p->outer_Bps - (p->outer_Bps - p->inner_Bps) * z / (p->zones - 1);
}

/* Derive geometry and the seek curve; 0 on success, -1 if the parameters are
 * inconsistent (e.g. an average seek the curve cannot meet). */
static inline int abt_disk_init(struct abt_disk *d, const struct abt_disk_params *p)
{
    char *z = (char *)d;
    for (unsigned long i = 0; i < sizeof *d; i++) z[i] = 0;
    d->p = *p;
    if (!p->sectors || !p->outer_Bps || !p->iface_Bps || p->inner_Bps > p->outer_Bps
        || p->zones < 1 || p->zones > ABT_DISK_MAX_ZONES || p->depth < 1)
        return -1;
    if (p->fixed_ns || !p->rpm) {
        d->nzones = 1;
        d->tracks = 1;
        d->zone[0].spt = p->sectors;
        d->zone[0].tracks = 1;
        return 0;
    }
    d->rev_ns = 60000000000ull / p->rpm;
    /* A track holds what the sustained rate moves in one turn plus one track switch. */
    abt_u64 spt_sum = 0;
    for (abt_u64 k = 0; k < p->zones; k++) {
        d->zone[k].spt = abt_disk_zone_Bps(p, k) * (d->rev_ns + p->seek_t2t_ns)
                         / 1000000000ull / ABT_DISK_SECTOR;
        if (!d->zone[k].spt) return -1;
        spt_sum += d->zone[k].spt;
    }
    abt_u64 per_zone = (p->sectors * p->zones / spt_sum + p->zones - 1) / p->zones;
    abt_u64 lba = 0, track = 0;
    for (abt_u64 k = 0; k < p->zones; k++) {
        d->zone[k].start_lba = lba;
        d->zone[k].start_track = track;
        d->zone[k].tracks = per_zone;
        d->zone[k].skew = (p->seek_t2t_ns * d->zone[k].spt + d->rev_ns - 1) / d->rev_ns;
        if (k == p->zones - 1)   /* the last zone ends at the capacity */
            d->zone[k].tracks = (p->sectors - lba + d->zone[k].spt - 1) / d->zone[k].spt;
        lba += d->zone[k].tracks * d->zone[k].spt;
        track += d->zone[k].tracks;
    }
    d->nzones = p->zones;
    d->tracks = track;
    /* mean over uniform pairs of sqrt(x) is 8/15, of x is 1/3:
     * avg = t2t + c1 8/15 + c2/3 and c1 + c2 = full - t2t  =>  c1 = 5 (avg - t2t) - 5/3 (full - t2t) */
    if (p->seek_full_ns < p->seek_t2t_ns || p->seek_avg_ns < p->seek_t2t_ns) return -1;
    abt_u64 span = p->seek_full_ns - p->seek_t2t_ns, a = p->seek_avg_ns - p->seek_t2t_ns;
    if (15 * a < 5 * span || 15 * a > 8 * span) return -1;   /* c1 < 0 or c2 < 0 */
    d->c1 = (15 * a - 5 * span) / 3;
    d->c2 = span - d->c1;
    return 0;
}

/* Seek time over dist tracks. */
static inline abt_u64 abt_disk_seek_ns(const struct abt_disk *d, abt_u64 dist)
{
    if (!dist) return 0;
    if (!d->p.rpm) return d->p.seek_avg_ns;
    abt_u64 x = d->tracks > 1 ? ((dist - 1) << 20) / (d->tracks - 1) : 0;   /* x in 1/2^20 */
    return d->p.seek_t2t_ns + ((d->c1 * abt_disk_isqrt(x)) >> 10) + ((d->c2 * x) >> 20);
}

/* Zone, track and sector-in-track of lba. */
static inline const struct abt_disk_zone *abt_disk_locate(const struct abt_disk *d, abt_u64 lba,
                                                          abt_u64 *track, abt_u64 *sector)
{
    abt_u64 k = 0;
    while (k + 1 < d->nzones && lba >= d->zone[k + 1].start_lba) k++;
    const struct abt_disk_zone *z = &d->zone[k];
    *track = z->start_track + (lba - z->start_lba) / z->spt;
    *sector = (lba - z->start_lba) % z->spt;
    return z;
}

/* Move the head to lba and transfer n sectors from time t; returns the end time. */
static inline abt_u64 abt_disk_media(struct abt_disk *d, abt_u64 lba, abt_u64 n, abt_u64 t)
{
    abt_u64 t0 = t;
    if (!d->p.rpm) {   /* flash: one access, then the transfer */
        d->positionings++;
        t += d->p.seek_avg_ns + n * ABT_DISK_SECTOR * 1000000000ull / d->p.outer_Bps;
        d->head_lba = lba + n;
        d->media_ns += t - t0;
        return t;
    }
    while (n) {
        abt_u64 track, s;
        const struct abt_disk_zone *z = abt_disk_locate(d, lba, &track, &s);
        if (track != d->head_track) {
            d->positionings += track > d->head_track + 1 || track + 1 < d->head_track;
            t += abt_disk_seek_ns(d, track > d->head_track ? track - d->head_track
                                                           : d->head_track - track);
            d->head_track = track;
        }
        abt_u64 angle = ((s + (track - z->start_track) * z->skew) % z->spt) * d->rev_ns / z->spt;
        t += (angle + d->rev_ns - t % d->rev_ns) % d->rev_ns;
        abt_u64 k = abt_disk_min(n, z->spt - s);
        t += k * d->rev_ns / z->spt;
        lba += k;
        n -= k;
    }
    d->head_lba = lba;
    d->media_ns += t - t0;
    return t;
}

/* Index of the dirty extent the drive writes next at time t: C-LOOK from the head
 * among those ready by t; ndirty if none is. */
static inline abt_u64 abt_disk_next_dirty(const struct abt_disk *d, abt_u64 t)
{
    abt_u64 best = d->ndirty, low = d->ndirty;
    for (abt_u64 i = 0; i < d->ndirty; i++) {
        const struct abt_disk_extent *e = &d->dirty[i];
        if (e->ready > t) continue;
        if (e->lba >= d->head_lba && (best == d->ndirty || e->lba < d->dirty[best].lba)) best = i;
        if (low == d->ndirty || e->lba < d->dirty[low].lba) low = i;
    }
    return best < d->ndirty ? best : low;
}

/* Write back one piece of dirty data: the media starts when it is free and some
 * data is ready (force > 0: at once from max(free, force), whatever is dirty: a
 * FLUSH, or a write waiting for room); returns when that piece is on the platter.
 * ndirty must be > 0. */
static inline abt_u64 abt_disk_destage(struct abt_disk *d, abt_u64 force)
{
    abt_u64 t = d->media_until > force ? d->media_until : force;
    abt_u64 i = abt_disk_next_dirty(d, force ? ~0ull : t);
    if (i == d->ndirty) {   /* nothing ready yet: the media idles until the first is */
        t = ~0ull;
        for (abt_u64 k = 0; k < d->ndirty; k++)
            if (d->dirty[k].ready < t) t = d->dirty[k].ready;
        i = abt_disk_next_dirty(d, t);
    }
    struct abt_disk_extent *e = &d->dirty[i];
    abt_u64 lba = e->lba, n = abt_disk_min(e->n, ABT_DISK_DESTAGE_MAX);
    e->lba += n;
    e->n -= n;
    if (!e->n) d->dirty[i] = d->dirty[--d->ndirty];
    d->dirty_sectors -= n;
    d->destages++;
    d->media_until = abt_disk_media(d, lba, n, t);
    return d->media_until;
}

/* When the next write-back would start (~0 if the cache is clean). */
static inline abt_u64 abt_disk_next_destage_start(const struct abt_disk *d)
{
    abt_u64 ready = ~0ull;
    for (abt_u64 k = 0; k < d->ndirty; k++)
        if (d->dirty[k].ready < ready) ready = d->dirty[k].ready;
    return ready == ~0ull ? ready : ready > d->media_until ? ready : d->media_until;
}

/* Put a write into the cache: extend an extent it continues, drop extents it covers. */
static inline void abt_disk_cache_add(struct abt_disk *d, abt_u64 lba, abt_u64 n, abt_u64 ready)
{
    for (abt_u64 i = 0; i < d->ndirty;) {
        struct abt_disk_extent *e = &d->dirty[i];
        if (e->lba >= lba && e->lba + e->n <= lba + n) {   /* rewritten whole */
            d->dirty_sectors -= e->n;
            d->dirty[i] = d->dirty[--d->ndirty];
            continue;
        }
        if (e->lba <= lba && lba + n <= e->lba + e->n) return;   /* inside one */
        i++;
    }
    for (abt_u64 i = 0; i < d->ndirty; i++)
        if (d->dirty[i].lba + d->dirty[i].n == lba) {
            d->dirty[i].n += n;   /* ready when its first part was */
            d->dirty_sectors += n;
            return;
        }
    d->dirty[d->ndirty].lba = lba;
    d->dirty[d->ndirty].n = n;
    d->dirty[d->ndirty].ready = ready;
    d->ndirty++;
    d->dirty_sectors += n;
}

/* The media's background work that starts before time now. */
static inline void abt_disk_advance(struct abt_disk *d, abt_u64 now)
{
    while (d->ndirty && abt_disk_next_destage_start(d) < now)
        abt_disk_destage(d, 0);
}

/* Serve one request the drive takes at time t (its arrival, or when the command
 * before it completed); returns when it completes. op: ABT_DISK_READ/WRITE/FLUSH. */
static inline abt_u64 abt_disk_serve(struct abt_disk *d, int op, abt_u64 lba, abt_u64 n,
                                     int fua, abt_u64 t)
{
    const struct abt_disk_params *p = &d->p;
    d->requests++;
    d->flushes += op == ABT_DISK_FLUSH;
    if (t < d->busy_until) t = d->busy_until;
    if (p->fixed_ns) {
        d->busy_until = t + p->fixed_ns;
        return d->busy_until;
    }
    abt_disk_advance(d, t);
    if (lba >= p->sectors) lba %= p->sectors;
    if (lba + n > p->sectors) n = p->sectors - lba;
    t += p->overhead_ns;
    if (op == ABT_DISK_FLUSH) {
        while (d->ndirty) abt_disk_destage(d, t);
        if (d->media_until > t) t = d->media_until;
        t += p->flush_ns;
    } else if (op == ABT_DISK_WRITE && p->cache_bytes && !fua
               && n * ABT_DISK_SECTOR <= p->cache_bytes) {
        /* wait for room: write-backs already under way or started for it */
        while (d->ndirty && (d->ndirty == ABT_DISK_EXTENTS
                             || (d->dirty_sectors + n) * ABT_DISK_SECTOR > p->cache_bytes)) {
            abt_u64 freed = abt_disk_destage(d, t);
            if (freed > t) t = freed;
        }
        t += n * ABT_DISK_SECTOR * 1000000000ull / p->iface_Bps;
        abt_disk_cache_add(d, lba, n, t + p->idle_ns);
    } else {
        abt_u64 wire = t + n * ABT_DISK_SECTOR * 1000000000ull / p->iface_Bps;
        abt_u64 s = d->media_until > t ? d->media_until : t;
        t = d->media_until = abt_disk_media(d, lba, n, s);   /* the wire overlaps */
        if (wire > t) t = wire;
    }
    d->busy_until = t;
    return t;
}

/* Which of n waiting requests (their LBAs, oldest first) the drive serves next:
 * the oldest at depth 1, else C-LOOK from the head among the oldest `depth`. */
static inline abt_u64 abt_disk_pick(const struct abt_disk *d, const abt_u64 *lbas, abt_u64 n)
{
    abt_u64 m = abt_disk_min(n, d->p.depth), best = m, low = 0;
    if (m <= 1) return 0;
    for (abt_u64 i = 0; i < m; i++) {
        if (lbas[i] >= d->head_lba && (best == m || lbas[i] < lbas[best])) best = i;
        if (lbas[i] < lbas[low]) low = i;
    }
    return best < m ? best : low;
}

#endif
