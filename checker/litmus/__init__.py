"""The litmus front end: the kernel's litmus C format (reader) and the axiomatic LKMM (and sc,
tso) evaluator that decides it, the reference for loop-free input."""
