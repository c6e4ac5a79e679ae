" Vim syntax file for timerace models (.spec files; see ftdetect/timerace.vim).
" The keyword lists are spec/grammar.lark's keywords, the builtins checker/resolve.py's
" BUILTINS and ALIASES; tests/test_editors.py fails when they drift apart.
if exists("b:current_syntax")
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

syntax keyword timeraceDeclaration model memory const enum var waitqueue process inline fn invariant final property reachable sometimes
      \ variant expect violated lemma cpus preemptions percpu ghost interrupt hrtimer guest of
syntax keyword timeraceControl if else while loop break continue goto await atomic choose or assert skip stutter return
syntax keyword timeraceTemporal always eventually
syntax keyword timeraceQuantifier forall exists in
syntax keyword timeraceModifier unfair fair strongly preemptible posted pinned clock on
syntax keyword timeraceType bool bitset
" checker/resolve.py RESERVED_TYPES
syntax keyword timeraceReservedType u8 u16 u32 u64 s8 s16 s32 s64
syntax keyword timeraceBoolean true false
syntax keyword timeraceConstant any
syntax keyword timeraceSelf self
" the kernel primitives
syntax keyword timeraceBuiltin atomic_read READ_ONCE smp_load_acquire atomic_set
      \ WRITE_ONCE smp_store_release smp_store_mb atomic_inc atomic_dec atomic_add
      \ atomic_sub atomic_inc_return atomic_dec_return atomic_dec_and_test
      \ atomic_inc_and_test atomic_add_return atomic_add_return_relaxed
      \ atomic_add_return_acquire atomic_add_return_release atomic_fetch_add
      \ atomic_fetch_add_relaxed atomic_fetch_add_acquire atomic_fetch_add_release
      \ atomic_fetch_or atomic_fetch_or_relaxed atomic_fetch_or_acquire
      \ atomic_fetch_or_release set_bit clear_bit test_and_set_bit test_and_clear_bit
      \ test_bit bitmap_empty xchg xchg_relaxed xchg_acquire xchg_release cmpxchg
      \ cmpxchg_relaxed cmpxchg_acquire cmpxchg_release min max abs smp_mb smp_wmb
      \ smp_rmb smp_mb__before_atomic smp_mb__after_atomic smp_mb__after_spinlock
      \ smp_mb__after_srcu_read_unlock barrier spin_lock spin_trylock spin_unlock
      \ prepare_to_wait finish_wait schedule waitqueue_active swait_active wake_up
      \ swake_up_one prepare_to_swait prepare_to_swait_exclusive prepare_to_rcuwait
      \ finish_swait finish_rcuwait swake_up_all wake_up_all rcuwait_wake_up
      \ rcuwait_active
      \ local_irq_disable local_irq_enable local_irq_save local_irq_restore spin_lock_irqsave spin_unlock_irqrestore
      \ irqs_disabled preempt_disable preempt_enable get_cpu put_cpu smp_processor_id
      \ raise_irq send_IPI this_cpu_read this_cpu_write per_cpu hrtimer_start hrtimer_cancel hrtimer_try_to_cancel guest_enter vm_exit_by in_guest_mode vmexit
" checker/resolve.py MEMORY_MODELS, after `memory`
syntax match timeraceMemoryModel "\%(\<memory\s\+\)\@<=\%(sc\|tso\|lkmm\)\>"

syntax match timeraceOperator "->\|\.\.\|[-+*/%=!<>&|^~?@]"
syntax match timeraceNumber "\<\d\+"
syntax match timeraceNumber "\<0[xX]\x\+"
" a label where a statement starts, the target of a goto, a process's label after `@`
syntax match timeraceLabel "\%(\%(^\|[{;]\)\s*\)\@<=\h\w*\ze\s*:"
syntax match timeraceLabel "\%(\<goto\s\+\)\@<=\h\w*"
syntax match timeraceLabel "\%(@\s*\)\@<=\h\w*"
syntax match timeraceConstName "\<\u[A-Z0-9_]*\>"

" comments last: at the same column a later match wins, so `/` starts a comment
syntax keyword timeraceTodo contained TODO FIXME XXX NOTE
syntax match timeraceLineComment "//.*$" contains=timeraceTodo,@Spell
syntax region timeraceBlockComment start="/\*" end="\*/" contains=timeraceTodo,@Spell
" a screen that starts inside a block comment: look back for its `/*`
syntax sync ccomment timeraceBlockComment minlines=50

highlight default link timeraceDeclaration Keyword
highlight default link timeraceControl Statement
highlight default link timeraceTemporal Operator
highlight default link timeraceQuantifier Operator
highlight default link timeraceModifier StorageClass
highlight default link timeraceType Type
highlight default link timeraceReservedType Type
highlight default link timeraceBoolean Boolean
highlight default link timeraceConstant Constant
highlight default link timeraceSelf Identifier
highlight default link timeraceBuiltin Function
highlight default link timeraceMemoryModel Constant
highlight default link timeraceOperator Operator
highlight default link timeraceNumber Number
highlight default link timeraceLabel Label
highlight default link timeraceConstName Constant
highlight default link timeraceTodo Todo
highlight default link timeraceLineComment Comment
highlight default link timeraceBlockComment Comment

let b:current_syntax = "timerace"
let &cpo = s:cpo_save
unlet s:cpo_save
