package io.virtio4j.core.error;

/**
 * Why a queue is broken when touching the front-end's memory faulted: the file under a mapped region was shrunk
 * (or its pages taken away) after the memory table was set, and the access raised SIGBUS. The JVM turns that into
 * an {@link InternalError} in the thread that touched the page (see {@link #isGuestMemoryFault}); a queue thread
 * breaks its queues with this and goes on (devices' QueueRunner), the process and every other thread serve on.
 */
public final class GuestMemoryFaultException extends RingViolationException {
    private static final long serialVersionUID = 1L;
    /**
     * The message HotSpot gives the InternalError it raises for a SIGBUS (or SIGSEGV) in an access through Unsafe,
     * which every MemorySegment access, VarHandle on a segment and MemorySegment.copy is; checked on JDK 25, in the
     * interpreter, C1 and C2 code, for plain, acquire/release and CAS accesses, copies and fill.
     */
    private static final String HOTSPOT_FAULT = "a fault occurred in an unsafe memory access operation";

    /**
     * @param queue  the ring whose queue breaks
     * @param worker the thread that touched the memory, for the message
     * @param fault  the JVM's InternalError
     */
    public GuestMemoryFaultException(int queue, String worker, Throwable fault) {
        super("queue", queue, "guest memory faulted under " + worker + " (SIGBUS: the front-end shrank or unmapped"
                + " the file of a mapped region): " + fault.getMessage());
        initCause(fault);
    }

    /**
     * Whether {@code t} is the JVM's report of a fault in a memory access (guest memory whose file was shrunk),
     * rather than another internal error, which stays fatal to the thread.
     */
    public static boolean isGuestMemoryFault(Throwable t) {
        return t instanceof InternalError && t.getMessage() != null && t.getMessage().startsWith(HOTSPOT_FAULT);
    }
}
