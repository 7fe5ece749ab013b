package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Descriptors sent over a socketpair with SCM_RIGHTS. */
@ExtendWith(NoFdLeaks.class)
class FdPassingTest {
    private static final long PAGE = Mmap.pageSize();
    private static final int O_CLOEXEC = 0x80000;

    @Test
    void aMemfdSentOverASocketPairMapsOnTheReceivingSide() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined()) {
            MemorySegment senderView;
            try (FileDescriptor memfd = Memfd.create("passed", PAGE)) {
                senderView = Mmap.mapShared(memfd, PAGE, arena);
                senderView.set(JAVA_LONG, 0, 0x1234L);
                sender.sendmsg(message(arena, 99), 1, memfd);
            } // closing right after sendmsg is safe: the message holds its own reference

            FileDescriptor[] fds = new FileDescriptor[UnixSocket.MAX_FDS];
            MemorySegment buffer = arena.allocate(16);
            assertEquals(new UnixSocket.Received(1, 1), receiver.recvmsg(buffer, fds));
            assertEquals(99, buffer.get(JAVA_BYTE, 0));
            try (FileDescriptor received = fds[0]) {
                MemorySegment receiverView = Mmap.mapShared(received, PAGE, arena);
                assertEquals(0x1234L, receiverView.get(JAVA_LONG, 0));
                receiverView.set(JAVA_LONG, 8, 0x5678L);
                assertEquals(0x5678L, senderView.get(JAVA_LONG, 8));
            }
        }
    }

    @Test
    void eightDescriptorsArriveInOrderAndCloseOnExec() throws IOException {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined()) {
            FileDescriptor[] sent = memfds("order", 8);
            try {
                sender.sendmsg(message(arena, 1), 1, sent);
            } finally {
                closeAll(sent, 8);
            }
            FileDescriptor[] fds = new FileDescriptor[8];
            assertEquals(new UnixSocket.Received(1, 8), receiver.recvmsg(arena.allocate(8), fds));
            try {
                for (int i = 0; i < 8; i++) {
                    String target = Files.readSymbolicLink(Path.of("/proc/self/fd/" + fds[i].fd())).toString();
                    assertTrue(target.startsWith("/memfd:order-" + i + " "), target);
                    assertTrue((openFlags(fds[i]) & O_CLOEXEC) != 0, "received with MSG_CMSG_CLOEXEC");
                }
            } finally {
                closeAll(fds, 8);
            }
        }
    }

    @Test
    void moreDescriptorsThanTheControlBufferHoldsIsTruncationAndLeaksNone() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined()) {
            FileDescriptor[] sent = memfds("ctrunc", 8);
            try {
                sender.sendmsg(message(arena, 1), 1, sent);
            } finally {
                closeAll(sent, 8);
            }
            FileDescriptor[] fds = new FileDescriptor[2]; // control buffer for 2: the kernel drops 6, sets MSG_CTRUNC
            ControlMessageTruncatedException e = assertThrows(ControlMessageTruncatedException.class,
                    () -> receiver.recvmsg(arena.allocate(8), fds));
            assertTrue(e.getMessage().contains("MSG_CTRUNC"), e.getMessage());
            assertEquals(null, fds[0]);
        }
    }

    @Test
    void descriptorsBeyondTheCallersArrayAreClosedToo() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined()) {
            FileDescriptor[] sent = memfds("rounding", 4);
            try {
                sender.sendmsg(message(arena, 1), 1, sent);
            } finally {
                closeAll(sent, 4);
            }
            // room for 3 rounds the control buffer up to 4: all four arrive without MSG_CTRUNC, one too many
            ControlMessageTruncatedException e = assertThrows(ControlMessageTruncatedException.class,
                    () -> receiver.recvmsg(arena.allocate(8), new FileDescriptor[3]));
            assertFalse(e.getMessage().contains("MSG_CTRUNC"), e.getMessage());
        }
    }

    @Test
    void descriptorsWhereNoneAreExpectedAreClosed() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined();
             FileDescriptor memfd = Memfd.create("unexpected", 0)) {
            sender.sendmsg(message(arena, 1), 1, memfd);
            assertThrows(ControlMessageTruncatedException.class, () -> receiver.recvmsg(arena.allocate(8), new FileDescriptor[0]));
        }
    }

    @Test
    void bytesWithoutDescriptorsAndPeerCloseAsZeroBytes() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(96);
            data.set(JAVA_LONG, 88, 77L);
            try (UnixSocket sender = pair[0]) {
                sender.sendmsg(data, 96);
            }
            MemorySegment buffer = arena.allocate(96);
            FileDescriptor[] fds = new FileDescriptor[1];
            long got = 0;
            while (got < 96) {
                got += receiver.recvmsg(buffer.asSlice(got), fds).bytes();
            }
            assertEquals(77L, buffer.get(JAVA_LONG, 88));
            assertEquals(new UnixSocket.Received(0, 0), receiver.recvmsg(buffer, fds));
        }
    }

    @Test
    void sendingToAClosedPeerIsEPIPE() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; Arena arena = Arena.ofConfined()) {
            pair[1].close();
            LinuxException e = assertThrows(LinuxException.class, () -> sender.sendmsg(message(arena, 1), 1));
            assertEquals("EPIPE", e.errnoName());
        }
    }

    @Test
    void badSendsAreRejectedBeforeAnyCall() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket sender = pair[0]; UnixSocket receiver = pair[1]; Arena arena = Arena.ofConfined()) {
            FileDescriptor[] nine = memfds("nine", 9);
            try {
                assertThrows(IllegalArgumentException.class, () -> sender.sendmsg(message(arena, 1), 1, nine));
                assertThrows(IllegalArgumentException.class, () -> sender.sendmsg(message(arena, 1), 0, nine[0]));
            } finally {
                closeAll(nine, 9);
            }
            assertThrows(IllegalArgumentException.class, () -> sender.sendmsg(MemorySegment.ofArray(new byte[1]), 1));
            assertThrows(IllegalArgumentException.class, () -> sender.sendmsg(message(arena, 1), 2));
            assertThrows(IllegalArgumentException.class,
                    () -> receiver.recvmsg(MemorySegment.ofArray(new byte[1]), new FileDescriptor[1]));
        }
    }

    private static MemorySegment message(Arena arena, int firstByte) {
        MemorySegment m = arena.allocate(1);
        m.set(JAVA_BYTE, 0, (byte) firstByte);
        return m;
    }

    private static FileDescriptor[] memfds(String prefix, int n) {
        FileDescriptor[] fds = new FileDescriptor[n];
        for (int i = 0; i < n; i++) {
            fds[i] = Memfd.create(prefix + "-" + i, 0);
        }
        return fds;
    }

    private static void closeAll(FileDescriptor[] fds, int n) {
        for (int i = 0; i < n; i++) {
            fds[i].close();
        }
    }

    /** The open-file flags of {@code fd}, from /proc/self/fdinfo (octal). */
    private static int openFlags(FileDescriptor fd) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd.fd()))) {
            if (line.startsWith("flags:")) {
                return Integer.parseInt(line.substring("flags:".length()).trim(), 8);
            }
        }
        throw new IllegalStateException("no flags line for " + fd);
    }
}
