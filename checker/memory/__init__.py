"""Memory models beyond sc: the operational LKMM machine (tso's store buffers live in the IR)."""
