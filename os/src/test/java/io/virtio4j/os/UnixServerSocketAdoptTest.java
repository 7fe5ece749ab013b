package io.virtio4j.os;

import io.virtio4j.testkit.NoFdLeaks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link UnixServerSocket#adopt}: a listening AF_UNIX stream socket handed down by a parent is taken over and
 * accepts; any other number is refused by what it is, and left open for its owner.
 */
@ExtendWith(NoFdLeaks.class)
class UnixServerSocketAdoptTest {
    @TempDir
    Path dir;

    @Test
    void aListeningSocketIsTakenOverWithItsPathAndAccepts() {
        Path path = dir.resolve("adopt.sock");
        int number = UnixServerSocket.listen(path, 1).fileDescriptor().release(); // as a parent hands it down
        try (UnixServerSocket adopted = UnixServerSocket.adopt(number);
             UnixSocket client = UnixSocket.connect(path);
             UnixSocket served = adopted.accept();
             Arena arena = Arena.ofConfined()) {
            assertEquals(path, adopted.path());
            assertEquals(path.toString(), adopted.address());
            assertEquals(number, adopted.fileDescriptor().fd());
            MemorySegment word = arena.allocate(JAVA_LONG);
            word.set(JAVA_LONG, 0, 0x5eed_cafe_0123_4567L);
            client.sendmsg(word, 8);
            MemorySegment got = arena.allocate(JAVA_LONG);
            assertEquals(8, served.recvmsg(got, new FileDescriptor[0]).bytes());
            assertEquals(0x5eed_cafe_0123_4567L, got.get(JAVA_LONG, 0));
        }
        assertTrue(Files.exists(path), "closing leaves the socket file to whoever made it");
    }

    @Test
    void anAdoptedListenerIsNotPassedOnToThisProcesssChildren() throws Exception {
        // a descriptor handed down arrives without close-on-exec (the parent cleared it to pass it on)
        int number = UnixServerSocket.listen(dir.resolve("cloexec.sock"), 1).fileDescriptor().release();
        Native.call("fcntl(F_SETFD, 0)", st -> (int) FCNTL_INT.invokeExact(st, number, 2 /* F_SETFD */, 0));
        assertEquals(0, openFlags(number) & O_CLOEXEC, "precondition: inheritable");
        try (UnixServerSocket adopted = UnixServerSocket.adopt(number)) {
            assertEquals(O_CLOEXEC, openFlags(number) & O_CLOEXEC);
        }
    }

    /** The "flags:" line of /proc/self/fdinfo/N (octal; O_CLOEXEC shows there for a close-on-exec number). */
    private static int openFlags(int fd) throws java.io.IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
            if (line.startsWith("flags:")) {
                return Integer.parseInt(line.substring("flags:".length()).trim(), 8);
            }
        }
        throw new IllegalStateException("no flags line for fd " + fd);
    }

    private static final int O_CLOEXEC = 02000000;
    private static final java.lang.invoke.MethodHandle FCNTL_INT = Native.downcallErrno("fcntl",
            java.lang.foreign.Linker.Option.firstVariadicArg(2), java.lang.foreign.ValueLayout.JAVA_INT,
            java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT);

    @Test
    void aNumberThatIsNotOpenIsRefusedAsSuch() {
        // far above any descriptor limit this process has: never open
        NotAListeningSocketException e = assertThrows(NotAListeningSocketException.class, () -> UnixServerSocket.adopt(1 << 30));
        assertEquals(1 << 30, e.fd());
        assertEquals("fd 1073741824 is not a listening AF_UNIX stream socket: not an open descriptor (EBADF)", e.getMessage());
        assertEquals("not a descriptor number", assertThrows(NotAListeningSocketException.class,
                () -> UnixServerSocket.adopt(-1)).found());
    }

    @Test
    void aMemfdIsRefusedAndStaysOpen() {
        try (FileDescriptor memfd = Memfd.create("adopt", 4096)) {
            NotAListeningSocketException e = assertThrows(NotAListeningSocketException.class, () -> UnixServerSocket.adopt(memfd.fd()));
            assertEquals("not a socket (ENOTSOCK)", e.found());
            assertEquals(4096, memfd.size(), "refused, the number is still its owner's");
        }
    }

    @Test
    void aConnectedStreamSocketIsRefusedAsNotListening() {
        UnixSocket[] pair = UnixSocket.pair();
        try (UnixSocket a = pair[0]; UnixSocket b = pair[1]) {
            NotAListeningSocketException e = assertThrows(NotAListeningSocketException.class,
                    () -> UnixServerSocket.adopt(a.fileDescriptor().fd()));
            assertEquals("an AF_UNIX stream socket that is not listening", e.found());
            assertTrue(a.fileDescriptor().isOpen());
        }
    }

    @Test
    void aDatagramSocketIsRefusedByItsType() {
        try (DatagramPair pair = DatagramPair.create()) {
            NotAListeningSocketException e = assertThrows(NotAListeningSocketException.class,
                    () -> UnixServerSocket.adopt(pair.first().fileDescriptor().fd()));
            assertEquals("an AF_UNIX socket of type SOCK_DGRAM", e.found());
        }
    }

    @Test
    void aListenerWithAnAbstractAddressHasNoPath() {
        // bind with only the family in the address: the kernel picks an abstract name ("autobind")
        FileDescriptor fd = UnixSocket.newStreamSocket();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment family = arena.allocate(UnixAddress.size());
            family.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 0, UnixAddress.AF_UNIX);
            int n = fd.fd();
            Native.call("bind", st -> (int) BIND.invokeExact(st, n, family, 2));
            Native.call("listen", st -> (int) LISTEN.invokeExact(st, n, 1));
        } catch (RuntimeException e) {
            fd.close();
            throw e;
        }
        try (UnixServerSocket adopted = UnixServerSocket.adopt(fd.release())) {
            assertNull(adopted.path());
            assertTrue(adopted.address().startsWith("@") && adopted.address().length() > 1, adopted.address());
        }
    }

    private static final java.lang.invoke.MethodHandle BIND = Native.downcallErrno("bind", java.lang.foreign.ValueLayout.JAVA_INT,
            java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.ADDRESS, java.lang.foreign.ValueLayout.JAVA_INT);
    private static final java.lang.invoke.MethodHandle LISTEN = Native.downcallErrno("listen",
            java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT);
}
