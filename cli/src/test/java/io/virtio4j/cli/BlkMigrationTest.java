package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Live migration of a working Linux guest through serve blk, with real QEMU ({@code peers/qemu-migrate.sh}): two QEMU
 * processes (TCG, memfd guest RAM), each on its own serve blk over the same image, the destination started with
 * {@code -incoming}; the guest reads the disk into its page cache and writes it with O_DIRECT while QEMU moves it.
 * After the move the guest, on the destination, checks every block it read (the page cache's bytes, as they arrived)
 * and every chunk it wrote. The negative control proves that check can fail: a source back-end that does not mark the
 * data it reads in the dirty log (serve blk's test-only --debug-no-dirty-log) leaves stale blocks on the destination.
 * The migration is capped at 32 MiB/s (QEMU's default) so that it lasts a few seconds of reads.
 */
class BlkMigrationTest {
    private static PeerRuns.Outcome migrate(boolean logReads, boolean packed) throws IOException, InterruptedException {
        return PeerRuns.migrate("blk", PeerRuns.cli() + " serve blk --socket {sock} --file {img}", logReads, packed);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"split", "packed"})
    void aWorkingGuestMovesToAnotherQemuAndFindsEveryBlockItReadAndWroteIntact(String ring) throws IOException, InterruptedException {
        boolean packed = ring.equals("packed");
        PeerRuns.Outcome r = migrate(true, packed);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.line("MIGRATE ").startsWith("MIGRATE status=completed "), r.output());
        String guest = r.line("GUEST ");
        // the check covers blocks the back-end read while the migration ran, or it proves nothing
        assertTrue(PeerRuns.field(guest, "during") > 0, r.output());
        assertEquals(0, PeerRuns.field(guest, "bad"), r.output());
        assertTrue(r.line("CHECK ").startsWith("CHECK ok migrate=completed guest_read=ok guest_write=ok image=ok dst_console=ok"),
                r.output());
        assertTrue(r.line("CHECK ").endsWith(" packed=" + (packed ? "1/1" : "0/0")), r.output());
    }

    @Test
    void withoutTheReadDataInTheDirtyLogTheGuestFindsStaleBlocksAfterTheMove() throws IOException, InterruptedException {
        PeerRuns.Outcome r = migrate(false, false);
        assertTrue(r.line("MIGRATE ").startsWith("MIGRATE status=completed "), r.output());
        assertTrue(PeerRuns.field(r.line("GUEST "), "bad") > 0, r.output());
        String check = r.line("CHECK ");
        // only the reads are wrong: the run went through, the writes are intact, the guest reported on the destination
        assertTrue(check.startsWith("CHECK FAIL migrate=completed guest_read=FAIL guest_write=ok image=ok dst_console=ok"), r.output());
        assertEquals(1, r.exit(), r.output());
    }
}
