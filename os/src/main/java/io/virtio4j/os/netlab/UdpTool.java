package io.virtio4j.os.netlab;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.BitSet;

/**
 * The far end of tap traffic, run inside a {@link TapNamespace} as its own process (the kernel's real path:
 * UDP socket, IP, neighbour table, the tap's transmit). Every loop is bounded in count and time, and a sender
 * also stops when its standard input closes (its parent is gone).
 *
 * <pre>
 * send  HOST PORT COUNT PPS MINLEN MAXLEN   COUNT checksummed datagrams (PPS 0: as fast as possible); prints "sent N"
 * flood HOST PORT LEN SECONDS               one checksummed payload over and over, as fast as possible; prints "sent N"
 * recv  PORT COUNT TIMEOUT_MS               prints "ready", then receives and checks; prints "received N bad B distinct D"
 * </pre>
 */
public final class UdpTool {
    /** Set when standard input closed: senders stop, print their count and exit. */
    private static volatile boolean stopped;

    private UdpTool() {
    }

    public static void main(String[] args) throws Exception {
        Thread parentWatch = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // drain: only EOF matters
                }
            } catch (IOException ignored) {
                // treat as EOF
            }
            stopped = true;
            try {
                Thread.sleep(5000); // time to finish and report; then go whatever the main loop does
            } catch (InterruptedException ignored) {
                // go now
            }
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }, "stdin-watch");
        parentWatch.setDaemon(true);
        switch (args[0]) {
            case "send" -> {
                parentWatch.start();
                send(args);
            }
            case "flood" -> {
                parentWatch.start();
                flood(args);
            }
            case "recv" -> recv(args);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    /** The payload length of datagram {@code seq} when lengths cycle through [min, max]. */
    public static int lengthOf(int seq, int min, int max) {
        return min + (int) ((seq * 7919L) % (max - min + 1));
    }

    private static void send(String[] a) throws Exception {
        InetSocketAddress to = new InetSocketAddress(a[1], Integer.parseInt(a[2]));
        int count = Integer.parseInt(a[3]);
        int pps = Integer.parseInt(a[4]);
        int min = Integer.parseInt(a[5]);
        int max = Integer.parseInt(a[6]);
        long sent = 0;
        byte[] buf = new byte[max];
        try (DatagramChannel c = DatagramChannel.open()) {
            c.setOption(StandardSocketOptions.SO_SNDBUF, 1 << 20);
            long start = System.nanoTime();
            for (int seq = 0; seq < count && !stopped; seq++) {
                int len = lengthOf(seq, min, max);
                UdpFrames.fillPayload(MemorySegment.ofArray(buf), 0, len, seq);
                c.send(ByteBuffer.wrap(buf, 0, len), to);
                sent++;
                if (pps > 0) {
                    long due = start + (seq + 1) * 1_000_000_000L / pps;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                }
            }
        }
        System.out.println("sent " + sent);
    }

    private static void flood(String[] a) throws Exception {
        InetSocketAddress to = new InetSocketAddress(a[1], Integer.parseInt(a[2]));
        int len = Integer.parseInt(a[3]);
        long end = System.nanoTime() + (long) (Double.parseDouble(a[4]) * 1e9);
        byte[] buf = new byte[len];
        UdpFrames.fillPayload(MemorySegment.ofArray(buf), 0, len, 0);
        ByteBuffer b = ByteBuffer.allocateDirect(len);
        b.put(buf).flip();
        long sent = 0;
        try (DatagramChannel c = DatagramChannel.open()) {
            c.connect(to);
            while (System.nanoTime() < end && !stopped) {
                for (int i = 0; i < 256; i++) {
                    b.rewind();
                    c.write(b);
                }
                sent += 256;
            }
        }
        System.out.println("sent " + sent);
    }

    private static void recv(String[] a) throws Exception {
        int port = Integer.parseInt(a[1]);
        int count = Integer.parseInt(a[2]);
        long deadline = System.nanoTime() + Long.parseLong(a[3]) * 1_000_000L;
        long received = 0;
        long bad = 0;
        BitSet seen = new BitSet();
        try (DatagramChannel c = DatagramChannel.open()) {
            c.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
            c.bind(new InetSocketAddress("0.0.0.0", port));
            c.configureBlocking(false);
            System.out.println("ready");
            System.out.flush();
            ByteBuffer b = ByteBuffer.allocate(65536);
            while (received < count && System.nanoTime() < deadline) {
                b.clear();
                if (c.receive(b) == null) {
                    Thread.sleep(1);
                    continue;
                }
                received++;
                long seq = UdpFrames.check(MemorySegment.ofArray(b.array()), 0, b.position());
                if (seq < 0) {
                    bad++;
                } else {
                    seen.set((int) seq);
                }
            }
        }
        System.out.println("received " + received + " bad " + bad + " distinct " + seen.cardinality());
    }
}
