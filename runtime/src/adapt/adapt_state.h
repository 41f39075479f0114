/* State shared by the adaptive mode's files (adapt*.c; the interface is adapt.h): the classes
 * of recurring phases, the log of ended phases, and the hand-offs between the files. */
#ifndef IOTUNE_ADAPT_STATE_H
#define IOTUNE_ADAPT_STATE_H

#include "platform/mpiapi.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "adapt/kbmatch.h"
#include "adapt/phase.h"
#include "adapt/rules.h"
#include "capture/capture.h"
#include "config/settings.h"

_Static_assert(IOT_RULE_COUNT <= 62, "a class keeps its rules as bits of one word");
/* The bit of a class's rules that stands for the knowledge base's settings (adapt_kb.c): agreed,
 * applied, judged and reverted with the rules. */
#define IOT_KB_BIT 63
#define IOT_KB_MASK ((uint64_t)1 << IOT_KB_BIT)
/* Not a rule: in the agreement at an open, "this rank does not give the class's rules to this
 * phase" (its learning phase had another number of ranks), so that every rank opens with the
 * control file's settings alone. */
#define IOT_PLAIN_MASK ((uint64_t)1 << 62)

/* An optimised phase below this share of the learning phase's bytes/s reverts its rules. */
#define IOT_GUARD_RATIO 0.9
/* ... in this many optimised phases in a row: one phase against one is mostly noise on a
 * loaded machine (coefficients of variation of 30-70 %, LAB-NOTES) */
#define IOT_GUARD_STRIKES 2
#define IOT_ADAPT_CLASSES 64
#define IOT_ADAPT_LOG 256

typedef struct {
    char name[IOT_CLASS_MAX];
    int phases;       /* ended so far */
    int learn_ranks;  /* ranks of the learning phase's file, 0 before it */
    double learn_bps; /* bytes/s of the learning phase */
    int learn_posted; /* its transfers were nonblocking: their wait is not timed */
    uint64_t fired;   /* online rules that held on the learning phase */
    uint64_t reverted;
    int strikes;          /* optimised phases in a row below the guard ratio */
    int kb_entry;         /* the knowledge base's entry for the class, -1 none */
    iot_insights learned; /* the learning phase's insights (settings taken from an insight) */
} iot_adapt_class;

/* What the profile says of one phase (rank 0's view; a shared file's is every rank's). */
typedef struct {
    char cls[IOT_CLASS_MAX], file[IOT_REC_NAME];
    int index, ranks, agreed;
    int learning;       /* the class learns from this phase (if it moves data) */
    int fewer;          /* on fewer ranks than the class's learning phase: neither learned
                           from nor judged, run with the defaults */
    int relearned_from; /* learning phase that replaced one on this many ranks, else 0 */
    double elapsed, transfer, busy, bytes, ratio;
    uint64_t applied, fired, reverted;
    uint64_t offline; /* setting rules that held on this phase but are advice only (online no) */
    int slow;         /* below the guard ratio (a strike) */
    int unlike;       /* applied, not judged: IOT_UNLIKE_MIX, IOT_UNLIKE_POSTED */
    int posted;       /* nonblocking MPI-IO transfers: the time of their wait is not measured */
    int idle;         /* moved no data: neither learned from nor judged */
    int kb_looked, kb_entry; /* learning phase: the knowledge base asked; its entry or -1 */
    double kb_distance;
    double extract_s, optimise_s, wait_s; /* wait: in the agreements, for the slowest rank */
    iot_insights in;
} iot_phase_log;

/* adapt.c: the classes and the log, under iot_adapt_lock */
extern pthread_mutex_t iot_adapt_lock;
extern iot_adapt_class iot_adapt_classes[IOT_ADAPT_CLASSES];
extern int iot_adapt_nclasses;
extern iot_phase_log *iot_adapt_log[IOT_ADAPT_LOG];
extern int iot_adapt_nlog, iot_adapt_dropped;

/* The rules of a class in effect: those that fired and were not reverted. */
static inline uint64_t iot_adapt_active(const iot_adapt_class *k)
{
    return k->fired & ~k->reverted;
}

/* Copies insights: the file system's word points into the struct itself. */
static inline void iot_insights_copy(iot_insights *dst, const iot_insights *src)
{
    *dst = *src;
    if (src->v[IOT_I_FS].word == src->fs)
        dst->v[IOT_I_FS].word = dst->fs;
}

/* adapt_guard.c: learning and the guard */
void iot_adapt_guard_init(void); /* IOTUNE_TEST_SLOW_RULE */
/* How a phase on `ranks` ranks stands to class k (lock held): IOT_FIT_SAME, the class's rules
 * apply (or it has not learned yet); IOT_FIT_MORE, its learning phase had fewer ranks (a file one
 * rank opened alone on MPI_COMM_SELF or a sub-communicator does not stand for files all ranks
 * open): this phase runs with the defaults and the class learns again from it; IOT_FIT_FEWER,
 * its learning phase had more ranks: this phase runs with the defaults, neither learned from
 * nor judged. */
enum { IOT_FIT_SAME, IOT_FIT_MORE, IOT_FIT_FEWER };
int iot_adapt_fit(const iot_adapt_class *k, int ranks);
/* A phase of class k ended (lock held; lg->learning, lg->fewer, lg->ranks set): a learning
 * phase learns the rules that hold on its insights, a later one that applied rules (applied)
 * is judged against the learning phase. Every phase with data gets the offline-only setting
 * rules that hold on its insights (lg->offline). */
void iot_adapt_judge(iot_adapt_class *k, uint64_t applied, iot_phase_log *lg, double bytes,
                     double seconds);
/* Why the guard left a phase that applied rules unjudged: its I/O mix is not the learning
 * phase's (it read where that one wrote), or one of the two posted nonblocking transfers, whose
 * time (MPI_Wait's) is not measured: a rate of their posting would judge nothing. */
enum { IOT_UNLIKE_MIX = 1, IOT_UNLIKE_POSTED };
/* A phase's I/O mix ("write", "read", "mixed"; "" unknown): the guard compares like with like. */
const char *iot_adapt_mix(const iot_insights *in);
/* Tests only: the transfer time a phase that applied rules is seen to take. */
double iot_adapt_test_seconds(uint64_t applied, double seconds);

/* adapt_kb.c: the knowledge base (IOTUNE_ADAPT_KB). At a learning phase's end (lock held): the
 * class's entry, and its bit among the rules that fired. The entries of its settings for the
 * class's settings set while the bit is in effect (out NULL: only counted); whether the class's
 * entry sets a parameter (in effect or not); the profile's view of them. */
void iot_adapt_kb_learn(iot_adapt_class *k, iot_phase_log *lg);
int iot_adapt_kb_settings(const iot_adapt_class *k, iot_entry *out, const iot_settings *control);
int iot_adapt_kb_sets(const iot_adapt_class *k, int param);
void iot_adapt_kb_write_applied(FILE *f, const iot_adapt_class *k, int *n);
void iot_adapt_kb_write(FILE *f, const iot_phase_log *lg);

/* adapt_settings.c: the settings set the classes' rules make (lock held) */
void iot_adapt_rebuild(void);
/* Does the control file set this parameter (or hint key) anywhere? Then the rules leave it. */
int iot_adapt_control_sets(const iot_settings *control, int param, const char *name);
/* The text of a rule's setting for class k (a literal, or the learning phase's insight). */
const char *iot_adapt_setting_text(const iot_adapt_class *k, const iot_rule_setting *s, char *buf,
                                   size_t len);

/* adapt_selection.c: HDF5 selection counts of a capture record */
enum {
    IOT_SEL_N,
    IOT_SEL_NONCONTIG,
    IOT_SEL_PAIRS,
    IOT_SEL_BACK,
    IOT_SEL_GAPS,
    IOT_SEL_POSTED,
    IOT_SEL_COUNT
};
void iot_adapt_selections(int rec, int64_t out[IOT_SEL_COUNT]);

/* adapt_layout.c: the layout insights of a record's phase. Reset at the phase's open; a write's
 * file selection (bounds, elements, is it the whole box). */
void iot_adapt_layout_reset(int rec);
void iot_adapt_layout_write(int rec, int64_t dset, int n, const uint64_t *start,
                            const uint64_t *end, double points, int is_box);
/* The close, in two steps around the phase's own reduction: this rank's share into sum and
 * max (returns a copy of its boxes, NULL when out of memory: said in max), then, with the
 * reduced arrays, the insights into `in`. fully_written needs the boxes of all ranks (a
 * collective over comm): only when `learning` (the class's first phase on every rank, where
 * the rules are decided; every rank decides alike from the reduced arrays); otherwise it is
 * "no" when the elements written fall short of the extent, else not computed. */
#define IOT_LAYOUT_SLOTS 16
#define IOT_LAYOUT_NSUM (7 + 2 * IOT_LAYOUT_SLOTS)
#define IOT_LAYOUT_NMAX (3 + 5 * IOT_LAYOUT_SLOTS)
void *iot_adapt_layout_begin(int rec, double *sum, double *max);
void iot_adapt_layout_end(void *copy, const double *asum, const double *amax, MPI_Comm comm,
                          int learning, iot_insights *in);

/* adapt_predict.c: the prediction's part of the profile */
void iot_adapt_write_predictions(FILE *f);

#endif
