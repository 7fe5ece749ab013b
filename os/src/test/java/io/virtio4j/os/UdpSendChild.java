package io.virtio4j.os;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;

/** Run inside a network namespace by tests: sends {@code count} small UDP datagrams to {@code host port}, one per 50 ms. */
public final class UdpSendChild {
    private UdpSendChild() {
    }

    public static void main(String[] args) throws Exception {
        InetSocketAddress to = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        int count = Integer.parseInt(args[2]);
        try (DatagramChannel c = DatagramChannel.open()) {
            for (int i = 0; i < count; i++) {
                c.send(ByteBuffer.wrap(new byte[] {1, 2, 3, (byte) i}), to);
                Thread.sleep(50);
            }
        }
    }

    /** The command line that runs this class in namespace {@code ns} with this JVM's java and class path. */
    static String[] inNamespace(String ns, String... args) {
        String java = ProcessHandle.current().info().command().orElse("java");
        String[] head = {"ip", "netns", "exec", ns, java, "-cp", System.getProperty("java.class.path"),
            UdpSendChild.class.getName()};
        String[] all = new String[head.length + args.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(args, 0, all, head.length, args.length);
        return all;
    }
}
