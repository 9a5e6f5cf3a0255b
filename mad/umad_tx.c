/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* The write queue of one umad port whose writes sleep (see umad_tx.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mad/umad_tx.h"

#define DEFAULT_MAX 4096
#define FIRST_CAP 64

struct slot {
	int agent;
	int len;
	int timeout_ms;
	int pad;
	unsigned char data[]; /* hdr_size + len bytes */
};

struct umad_tx {
	struct umad_tx_params p;
	size_t stride; /* bytes per slot, a multiple of 16 */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more;	/* the queue got a MAD, or stop */
	pthread_cond_t drained; /* a write finished (for umad_tx_flush) */
	unsigned char *ring;
	struct slot *out; /* the MAD being written (one writer at a time) */
	unsigned cap, head, count;
	uint64_t seq_in, seq_out; /* MADs queued, MADs written or failed */
	bool idle;		  /* the thread waits on `more` */
	bool writing;		  /* threadless: a thread is in umad_tx_write_out() */
	bool stop;
	unsigned flushers;
	struct umad_tx_counters c;
};

static struct slot *slot_at(struct umad_tx *tx, unsigned i)
{
	return (struct slot *)(tx->ring + (size_t)(i % tx->cap) * tx->stride);
}

/* Double the ring, unwrapping it; false at the bound or out of memory. */
/* Room for more: 0, -ENOBUFS at the limit (a full queue), -ENOMEM. */
static int grow(struct umad_tx *tx)
{
	unsigned ncap = tx->cap * 2;
	unsigned char *nr;

	if (tx->cap >= tx->p.max_queued)
		return -ENOBUFS;
	if (ncap > tx->p.max_queued)
		ncap = tx->p.max_queued;
	nr = aligned_alloc(16, (size_t)ncap * tx->stride);
	if (!nr)
		return -ENOMEM;
	for (unsigned i = 0; i < tx->count; i++)
		memcpy(nr + (size_t)i * tx->stride, slot_at(tx, tx->head + i), tx->stride);
	free(tx->ring);
	tx->ring = nr;
	tx->cap = ncap;
	tx->head = 0;
	return 0;
}

/*
 * Take the queue's first MAD and write it, unlocked meanwhile; called and
 * returns with tx->lock held.  Only the thread that set tx->writing calls
 * it, so the one `out` slot is its own.
 */
static void write_next(struct umad_tx *tx)
{
	const struct slot *q = slot_at(tx, tx->head);
	struct slot *s = tx->out;
	int rc;

	/* Out of the ring: the slot is free once unlocked, and grow() may move it. */
	if (s)
		memcpy(s, q, sizeof(*s) + tx->p.hdr_size + (size_t)q->len);
	tx->head = (tx->head + 1) % tx->cap;
	tx->count--;
	pthread_mutex_unlock(&tx->lock);
	rc = s ? tx->p.write(tx->p.ctx, tx->p.portid, s->agent, s->data, s->len, s->timeout_ms)
	       : -ENOMEM;
	pthread_mutex_lock(&tx->lock);
	if (rc < 0)
		tx->c.errors++;
	else
		tx->c.written++;
	tx->seq_out++;
	if (tx->flushers)
		pthread_cond_broadcast(&tx->drained);
}

static void *tx_thread(void *arg)
{
	struct umad_tx *tx = arg;

	pthread_mutex_lock(&tx->lock);
	for (;;) {
		while (!tx->count && !tx->stop) {
			tx->idle = true;
			pthread_cond_wait(&tx->more, &tx->lock);
		}
		tx->idle = false;
		if (!tx->count)
			break; /* stopping, and all written */
		write_next(tx);
	}
	pthread_mutex_unlock(&tx->lock);
	return NULL;
}

int umad_tx_create(struct umad_tx **out, const struct umad_tx_params *p)
{
	struct umad_tx *tx;
	int rc;

	if (!out || !p || !p->write)
		return -EINVAL;
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return -ENOMEM;
	tx->p = *p;
	if (!tx->p.max_queued)
		tx->p.max_queued = DEFAULT_MAX;
	tx->stride = (sizeof(struct slot) + p->hdr_size + UMAD_TX_MAD_MAX + 15) & ~(size_t)15;
	tx->cap = tx->p.max_queued < FIRST_CAP ? tx->p.max_queued : FIRST_CAP;
	tx->ring = aligned_alloc(16, (size_t)tx->cap * tx->stride);
	tx->out = aligned_alloc(16, tx->stride);
	if (!tx->ring || !tx->out) {
		free(tx->out);
		free(tx->ring);
		free(tx);
		return -ENOMEM;
	}
	pthread_mutex_init(&tx->lock, NULL);
	pthread_cond_init(&tx->more, NULL);
	{
		/* umad_tx_flush_timed() waits on the monotonic clock. */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&tx->drained, &ca);
		pthread_condattr_destroy(&ca);
	}
	rc = p->threadless ? 0 : pthread_create(&tx->thread, NULL, tx_thread, tx);
	if (rc) {
		pthread_cond_destroy(&tx->drained);
		pthread_cond_destroy(&tx->more);
		pthread_mutex_destroy(&tx->lock);
		free(tx->out);
		free(tx->ring);
		free(tx);
		return -rc;
	}
	if (!p->threadless)
		pthread_setname_np(tx->thread, "madcm-umad-tx"); /* 15 bytes at most */
	*out = tx;
	return 0;
}

int umad_tx_queue(struct umad_tx *tx, int agent, const void *umad, int len, unsigned timeout_ms)
{
	struct slot *s;
	bool wake;
	int rc;

	if (!tx || !umad || len <= 0)
		return -EINVAL;
	if (len > UMAD_TX_MAD_MAX)
		return -EMSGSIZE;
	pthread_mutex_lock(&tx->lock);
	if (tx->count == tx->cap && (rc = grow(tx))) {
		if (rc == -ENOBUFS)
			tx->c.full++;
		pthread_mutex_unlock(&tx->lock);
		return rc;
	}
	s = slot_at(tx, tx->head + tx->count);
	s->agent = agent;
	s->len = len;
	s->timeout_ms = (int)timeout_ms;
	memcpy(s->data, umad, tx->p.hdr_size + (size_t)len);
	tx->count++;
	tx->seq_in++;
	tx->c.queued++;
	/*
	 * One wake-up per idle spell: a burst queued meanwhile needs none.
	 * Signalled after the unlock, or the thread would wake only to wait
	 * for the lock this caller still holds (two more switches).  It is
	 * in pthread_cond_wait: it set idle under the lock before waiting.
	 */
	wake = tx->idle; /* never set without a thread */
	tx->idle = false;
	pthread_mutex_unlock(&tx->lock);
	if (wake)
		pthread_cond_signal(&tx->more);
	return 0;
}

bool umad_tx_write_out(struct umad_tx *tx)
{
	bool wrote = false;

	if (!tx)
		return false;
	pthread_mutex_lock(&tx->lock);
	/*
	 * One writer: a MAD queued while another thread writes is left to it,
	 * and it looks again (under this lock) before it stops, so none is
	 * stranded.
	 */
	if (tx->p.threadless && !tx->writing) {
		tx->writing = true;
		while (tx->count) {
			write_next(tx);
			wrote = true;
		}
		tx->writing = false;
	}
	pthread_mutex_unlock(&tx->lock);
	return wrote;
}

/* Wait for what is queued now; deadline NULL: as long as it takes. */
static int flush_until(struct umad_tx *tx, const struct timespec *deadline)
{
	uint64_t target;
	int rc = 0;

	umad_tx_write_out(tx);
	pthread_mutex_lock(&tx->lock);
	target = tx->seq_in;
	tx->flushers++;
	while (tx->seq_out < target && !rc)
		rc = deadline ? pthread_cond_timedwait(&tx->drained, &tx->lock, deadline)
			      : pthread_cond_wait(&tx->drained, &tx->lock);
	if (tx->seq_out >= target)
		rc = 0;
	tx->flushers--;
	pthread_mutex_unlock(&tx->lock);
	return rc ? -rc : 0;
}

void umad_tx_flush(struct umad_tx *tx)
{
	if (tx)
		flush_until(tx, NULL);
}

int umad_tx_flush_timed(struct umad_tx *tx, unsigned timeout_ms)
{
	struct timespec d;

	if (!tx)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &d);
	d.tv_sec += (time_t)(timeout_ms / 1000u);
	d.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
	if (d.tv_nsec >= 1000000000L) {
		d.tv_sec++;
		d.tv_nsec -= 1000000000L;
	}
	return flush_until(tx, &d);
}

void umad_tx_destroy(struct umad_tx *tx)
{
	if (!tx)
		return;
	if (tx->p.threadless) {
		umad_tx_flush(tx); /* no other thread writes (see umad_tx.h) */
	} else {
		pthread_mutex_lock(&tx->lock);
		tx->stop = true;
		pthread_cond_signal(&tx->more);
		pthread_mutex_unlock(&tx->lock);
		pthread_join(tx->thread, NULL);
	}
	pthread_cond_destroy(&tx->drained);
	pthread_cond_destroy(&tx->more);
	pthread_mutex_destroy(&tx->lock);
	free(tx->out);
	free(tx->ring);
	free(tx);
}

void umad_tx_counters(struct umad_tx *tx, struct umad_tx_counters *out)
{
	if (!tx || !out)
		return;
	pthread_mutex_lock(&tx->lock);
	*out = tx->c;
	pthread_mutex_unlock(&tx->lock);
}
