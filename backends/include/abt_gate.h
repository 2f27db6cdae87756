/*
 * abt_gate.h - the start gate of the workload programs.
 *
 * Workers wait behind the gate until every one of them exists, so none starts early
 * (IOzone does the same); if one cannot be created the gate opens with "abort" and the
 * rest leave instead of hanging at the barrier. The gate may live in a MAP_SHARED
 * mapping so forked workers share it (pshared).
 */
#ifndef ABT_GATE_H
#define ABT_GATE_H

#include <pthread.h>

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int value; /* 0 closed, 1 go, -1 abort */
} abt_gate;

static inline void abt_gate_init(abt_gate *g, int pshared)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, pshared);
    pthread_mutex_init(&g->mu, &ma);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, pshared);
    pthread_cond_init(&g->cv, &ca);
    g->value = 0;
}

/* Block until the gate opens; 1 = go, 0 = abort. */
static inline int abt_gate_wait(abt_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (g->value == 0) pthread_cond_wait(&g->cv, &g->mu);
    int go = g->value > 0;
    pthread_mutex_unlock(&g->mu);
    return go;
}

static inline void abt_gate_open(abt_gate *g, int value)
{
    pthread_mutex_lock(&g->mu);
    g->value = value;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

#endif
