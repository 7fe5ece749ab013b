package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

@ExtendWith(NoFdLeaks.class)
class DatagramPairTest {

    @Test
    void framesKeepTheirBoundariesAndAFullPeerPushesBackUntilItReads() {
        try (DatagramPair p = DatagramPair.create(); Arena arena = Arena.ofConfined(); Epoll epoll = Epoll.create(1)) {
            MemorySegment frame = arena.allocate(100);
            MemorySegment buf = arena.allocate(200);
            assertEquals(-Errno.EAGAIN, p.second().read(buf, buf.byteSize()));
            int sent = 0;
            long r;
            while ((r = p.first().write(frame.fill((byte) sent), 100)) > 0) {
                assertEquals(100, r);
                sent++;
                assertTrue(sent < 1_000_000, "never pushed back");
            }
            assertEquals(-Errno.EAGAIN, r);
            epoll.add(p.first().fileDescriptor(), Epoll.EPOLLOUT | Epoll.EPOLLET, 7);
            assertEquals(0, epoll.await(0), "not writable while the peer holds the writer's whole send buffer");
            // The writer is writable again once the reader has taken enough (a quarter of the buffer left).
            int read = 0;
            boolean writable = false;
            while (read < sent && !writable) {
                assertEquals(100, p.second().read(buf, buf.byteSize()), "whole frames, one per read");
                assertEquals((byte) read, buf.get(ValueLayout.JAVA_BYTE, 0), "in order");
                read++;
                writable = epoll.await(0) == 1;
            }
            assertTrue(writable, "EPOLLOUT after the reader drained " + read + " of " + sent);
            assertEquals(Epoll.EPOLLOUT, epoll.events(0) & Epoll.EPOLLOUT);
            assertEquals(7, epoll.data(0));
        }
    }
}
