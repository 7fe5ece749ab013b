package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.lang.management.ManagementFactory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Poll#await} and {@link Epoll#await} (and the eventfd reads and writes and the epoll registrations around
 * them in a queue's wait) allocate nothing even where C2 has not compiled them: a queue thread on a loaded machine waits in interpreted or C1 code for seconds, and there
 * the JDK's errno capture allocates a segment slice per call (only C2's escape analysis removes it). Measured in a
 * child JVM limited to C1, so the result does not depend on what this JVM's JIT did with earlier tests.
 */
@ExtendWith(NoFdLeaks.class)
class WaitAllocationTest {
    private static final int WAITS = 20_000;

    @Test
    void waitsAllocateNothingWithoutC2() {
        C1Child child = C1Child.run(WaitAllocationTest.class, 2);
        long waits = child.figure(0);
        long allocated = child.figure(1);
        assertEquals(5L * WAITS, waits, child.output());
        // a per-wait allocation is 40 bytes or more; a few objects of a lazy initialisation stay far below one
        // byte per wait
        assertTrue(allocated < waits / 2, allocated + " bytes allocated over " + waits + " waits");
    }

    /**
     * The child: polls a ready eventfd without a time-out, an idle one with a zero time-out, and signals and takes
     * a third; looks at the ready and the idle one through epoll, re-registering the idle one each time; then
     * prints the waits and the bytes this thread allocated doing them.
     */
    public static void main(String[] args) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (EventFd ready = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
             EventFd idle = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
             EventFd signalled = EventFd.create(EventFd.EFD_NONBLOCK | EventFd.EFD_CLOEXEC);
             Epoll epoll = Epoll.create(4)) {
            ready.write(1);
            epoll.add(ready.fileDescriptor(), Epoll.EPOLLIN, 1);
            epoll.add(idle.fileDescriptor(), Epoll.EPOLLIN, 2);
            Poll readyPoll = new Poll(ready.fileDescriptor(), Poll.POLLIN);
            Poll idlePoll = new Poll(idle.fileDescriptor(), Poll.POLLIN);
            Poll signalledPoll = new Poll(signalled.fileDescriptor(), Poll.POLLIN);
            long waits = 0;
            long allocated = 0;
            for (int pass = 0; pass < 2; pass++) { // the first links the method handles
                long before = threads.getCurrentThreadAllocatedBytes();
                waits = 0;
                for (int i = 0; i < WAITS; i++) {
                    waits += (readyPoll.await(-1) & Poll.POLLIN) != 0 ? 1 : 0;
                    waits += idlePoll.await(0) == 0 ? 1 : 0;
                    signalled.write(1);
                    waits += (signalledPoll.await(0) & Poll.POLLIN) != 0 && signalled.tryRead() == 1 ? 1 : 0;
                    waits += epoll.await(-1) == 1 && epoll.data(0) == 1 ? 1 : 0;
                    epoll.modify(idle.fileDescriptor(), Epoll.EPOLLIN, 2);
                    waits += epoll.await(0) == 1 ? 1 : 0;
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            System.out.println(waits + " " + allocated);
        }
    }
}
