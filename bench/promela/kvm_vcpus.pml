/* N vCPUs with a lapic hrtimer each: the Promela twin of bench/models/kvm_vcpus.spec
 * (its base model). Statement for statement the same steps, so that with SPIN's
 * reductions off (spin -o3 -a; gcc -DNOREDUCE) pan stores exactly the states our
 * checker counts; see philosophers.pml for the conventions, and bench/README.md.
 * bench/run.py puts `#define N ...` and `#define FORALL_N(P) ...` in front of this file;
 * without them it is the N = 2 instance.
 */
#ifndef N
#define N 2
#define FORALL_N(P) (P(0) && P(1))
#endif
#ifndef CHECK_REQUESTS
#define CHECK_REQUESTS 1
#endif

#define OUTSIDE_GUEST_MODE 0
#define IN_GUEST_MODE      1
#define EXITING_GUEST_MODE 2

byte mode[N];     /* vcpu->mode */
bool req[N];      /* KVM_REQ_PENDING_TIMER in vcpu->requests */
byte pending[N];  /* apic->lapic_timer.pending */
bool armed[N];    /* the vCPU's hrtimer is queued */
bool ipi[N];      /* a reschedule IPI latched on the vCPU's pCPU */
bool hk_busy;     /* the housekeeping CPU is running a timer callback */

active [N] proctype vcpu()
{
	do
	:: d_step { if :: !armed[_pid] && pending[_pid] == 0 -> armed[_pid] = 1 :: else fi };
	   mode[_pid] = IN_GUEST_MODE;
	   skip;                                       /* smp_mb() */
	   if
	   :: CHECK_REQUESTS && req[_pid] ->           /* kvm_request_pending(): cancel the entry */
		mode[_pid] = OUTSIDE_GUEST_MODE
	   :: else ->
guest:		ipi[_pid];                             /* the halted guest runs until the IPI */
		ipi[_pid] = 0;                         /* VM exit on the reschedule IPI */
		mode[_pid] = OUTSIDE_GUEST_MODE
	   fi;
	   if
	   :: req[_pid] ->                             /* kvm_check_request(KVM_REQ_PENDING_TIMER) */
		req[_pid] = 0;
		pending[_pid] = 0                      /* kvm_inject_apic_timer_irqs */
	   :: else
	   fi
	od
}

#define ME (_pid - N)

active [N] proctype hrtimer()
{
idle:	do
	:: d_step { armed[ME] && !hk_busy -> hk_busy = 1; armed[ME] = 0 };
	   if
	   :: pending[ME] == 0 ->                      /* apic_timer_expired */
		pending[ME]++;
		req[ME] = 1;                           /* kvm_make_request */
		if                                     /* kvm_vcpu_kick */
		:: d_step { mode[ME] == IN_GUEST_MODE -> mode[ME] = EXITING_GUEST_MODE };
			ipi[ME] = 1
		:: else
		fi
	   :: else
	   fi;
	   hk_busy = 0
	od
}

/* invariant no_lost_timer, checked in every state without adding one */
#define NO_LOST_TIMER(v) (!(vcpu[v]@guest && req[v] && hrtimer[N + v]@idle) || ipi[v])
active proctype monitor()
{
end:	atomic { !FORALL_N(NO_LOST_TIMER) -> assert(FORALL_N(NO_LOST_TIMER)) }
}
