/* Dining philosophers: the Promela twin of bench/models/philosophers.spec.
 *
 * Written so that, with SPIN's reductions off (spin -o3 -a; gcc -DNOREDUCE), pan stores
 * exactly the states our checker counts: one Promela statement per timerace step, each
 * `atomic { await ...; ... }` as a d_step, and the invariant as a monitor that stays at one
 * end-labelled control point (so it adds no state and keeps the deadlock check).
 * bench/run.py sets N by putting `#define N ...` and `#define FORALL_N(P) (P(0) && ...)`
 * in front of this file; without them it is the N = 4 instance.
 */
#ifndef N
#define N 4
#define FORALL_N(P) (P(0) && P(1) && P(2) && P(3))
#endif

#define FIRST(i)  (i == N - 1 -> 0 : i)
#define SECOND(i) (i == N - 1 -> i : i + 1)

byte fork[N];

active [N] proctype phil()
{
	do
	:: skip;                                        /* think */
	   d_step { fork[FIRST(_pid)] == 0 -> fork[FIRST(_pid)] = _pid + 1 };
	   d_step { fork[SECOND(_pid)] == 0 -> fork[SECOND(_pid)] = _pid + 1 };
eat:	   assert(fork[FIRST(_pid)] == _pid + 1 && fork[SECOND(_pid)] == _pid + 1);
	   fork[SECOND(_pid)] = 0;
	   fork[FIRST(_pid)] = 0
	od
}

/* invariant neighbours_apart, checked in every state without adding one */
#define APART(i) (!(phil[i]@eat && phil[(i + 1) % N]@eat))
active proctype monitor()
{
end:	atomic { !FORALL_N(APART) -> assert(FORALL_N(APART)) }
}
