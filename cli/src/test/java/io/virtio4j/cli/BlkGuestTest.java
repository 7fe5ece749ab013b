package io.virtio4j.cli;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real Linux guest (QEMU TCG, vhost-user-blk-pci) on a vhost-user-blk back-end, through
 * {@code peers/qemu-guest-blk.sh}: the guest reads a pattern the host put in the image, writes another with O_DIRECT
 * and reads it back, discards a range; the host then finds the guest's bytes in the image file. {@code serve blk}
 * on a split and on a packed ring, and with two queues (two vCPUs, two hardware queues in the guest);
 * qemu-storage-daemon (split only: it offers no packed ring) validates the harness itself.
 */
class BlkGuestTest {
    private static final int KILLS = 5;

    @ParameterizedTest(name = "{0} {1} {2} queue(s)")
    @CsvSource({"serve-blk,split,1", "serve-blk,packed,1", "serve-blk,split,2", "qemu-storage-daemon,split,1"})
    void aLinuxGuestReadsWhatTheHostWroteAndTheHostFindsWhatTheGuestWrote(String backend, String ring, int queues)
            throws IOException, InterruptedException {
        String cmd = backend.equals("serve-blk")
                ? PeerRuns.cli() + " serve blk --socket {sock} --file {img} --queues " + queues
                : PeerRuns.script("qsd.sh") + " --socket {sock} --image {img} --queues " + queues;
        List<String> argv = new ArrayList<>(List.of("bash", PeerRuns.script("qemu-guest-blk.sh").toString(),
                "--backend-cmd", cmd, "--queues", Integer.toString(queues)));
        if (ring.equals("packed")) {
            argv.add("--packed");
        }
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(4), argv);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().lines().anyMatch(l -> l.startsWith("CHECK ok ") && l.contains("read=ok readback=ok image=ok discard=ok")
                && l.contains("packed=" + (ring.equals("packed") ? "1/1" : "0/0")) && l.contains("queues=" + queues + "/" + queues)),
                r.output());
    }

    /**
     * QEMU ({@code -chardev socket,...,reconnect=1}) keeps a Linux guest's disk through back-end crashes: two guest
     * writers put fresh random 1 MiB chunks on the disk with O_DIRECT and fsync while serve blk is killed with SIGKILL
     * {@value #KILLS} times at random moments and restarted on the same socket; QEMU reconnects each time and resubmits
     * what was in flight through the back-end's inflight area (INFLIGHT_SHMFD: QEMU maps it, checked). Afterwards the guest
     * reads every chunk back against the MD5 it recorded, the host finds the same bytes in the image, and QEMU is still
     * alive and powers off cleanly. With the sync engine on one queue, io_uring on two, and a packed ring.
     */
    @ParameterizedTest(name = "{0}, {1} queue(s), {2}")
    @CsvSource({"sync,1,split", "io_uring,2,split", "io_uring,1,packed"})
    void aLinuxGuestKeepsItsDataWhileTheBackEndIsKilledAndRestarted(String engine, int queues, String ring)
            throws IOException, InterruptedException {
        String cmd = PeerRuns.cli() + " serve blk --socket {sock} --file {img} --io " + engine + " --queues " + queues;
        List<String> argv = new ArrayList<>(List.of("bash", PeerRuns.script("qemu-guest-blk.sh").toString(),
                "--backend-cmd", cmd, "--queues", Integer.toString(queues), "--kills", Integer.toString(KILLS),
                "--timeout", "240"));
        if (ring.equals("packed")) {
            argv.add("--packed");
        }
        PeerRuns.Outcome r = PeerRuns.run(Duration.ofMinutes(5), argv);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().lines().anyMatch(l -> l.startsWith("CHECK ok ") && l.contains(" kills=" + KILLS + "/" + KILLS
                + " guest=ok image=ok qemu=ok inflight=yes packed=" + (ring.equals("packed") ? "1/1" : "0/0") + " ")), r.output());
    }
}
