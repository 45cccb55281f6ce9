/* SPDX-License-Identifier: MIT */
/*
 * Event sources other than NVTX write into the process's spool through
 * these functions: under the spool lock, counted in the status page, so
 * that trace-record can still tell what a killed process lost.
 */
#include <string.h>

#include "inject.h"

size_t
tki_events(const struct tk_event *ev, size_t n)
{
	size_t done = 0;
	pthread_mutex_lock(&tki_lock);
	if (tki_writer && atomic_load(&tki_on)) {
		tki_spool_count_direct(n);
		for (; done < n; done++)
			if (tk_writer_event(tki_writer, &ev[done]) != TK_OK)
				break;
		if (done < n) /* refused: not in the spool, not produced */
			__atomic_fetch_sub(&tki_status->direct, n - done,
			                   __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tki_lock);
	return done;
}

int
tki_event(const struct tk_event *ev)
{
	return tki_events(ev, 1) == 1 ? 0 : -1;
}

uint32_t
tki_process_track(void)
{
	pthread_mutex_lock(&tki_lock);
	uint32_t id = tki_spool_process();
	pthread_mutex_unlock(&tki_lock);
	return id;
}

uint32_t
tki_thread_track(int64_t tid)
{
	pthread_mutex_lock(&tki_lock);
	uint32_t id = tki_spool_thread(tid, 0);
	pthread_mutex_unlock(&tki_lock);
	return id;
}

uint32_t
tki_device(const struct tk_device *d)
{
	pthread_mutex_lock(&tki_lock);
	uint32_t id = tki_writer ? tk_writer_device(tki_writer, 0, d) : 0;
	pthread_mutex_unlock(&tki_lock);
	return id;
}

uint32_t
tki_stream(const struct tk_stream *s)
{
	struct tk_stream c = *s;
	pthread_mutex_lock(&tki_lock);
	if (!c.process)
		c.process = tki_spool_process();
	uint32_t id = tki_writer ? tk_writer_stream(tki_writer, 0, &c) : 0;
	pthread_mutex_unlock(&tki_lock);
	return id;
}

uint32_t
tki_counter(const struct tk_counter *c)
{
	pthread_mutex_lock(&tki_lock);
	uint32_t id = tki_writer ? tk_writer_counter(tki_writer, 0, c) : 0;
	pthread_mutex_unlock(&tki_lock);
	return id;
}

uint32_t
tki_string(const char *s)
{
	pthread_mutex_lock(&tki_lock);
	uint32_t id = tki_spool_string(s, strlen(s));
	pthread_mutex_unlock(&tki_lock);
	return id;
}
