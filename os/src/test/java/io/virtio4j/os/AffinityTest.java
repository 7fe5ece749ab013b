package io.virtio4j.os;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AffinityTest {

    @Test
    void pinnedThreadRunsOnlyOnItsCpu() throws Exception {
        int[] allowed = Affinity.allowedCpus();
        assertTrue(allowed.length >= 1, "at least one CPU allowed");
        int target = allowed[allowed.length - 1];
        int[] seen = new int[2];
        Thread t = new Thread(() -> {
            Affinity.pinCurrentThread(target);
            seen[0] = Affinity.allowedCpus().length == 1 ? Affinity.allowedCpus()[0] : -1;
            seen[1] = Affinity.currentCpu();
        });
        t.start();
        t.join();
        assertArrayEquals(new int[] {target, target}, seen);
    }

    @Test
    void pinningToAMissingCpuNamesTheCallAndErrno() throws Exception {
        LinuxException[] caught = new LinuxException[1];
        Thread t = new Thread(() -> caught[0] = assertThrows(LinuxException.class, () -> Affinity.pinCurrentThread(1023)));
        t.start();
        t.join();
        assertEquals("EINVAL", caught[0].errnoName());
        assertTrue(caught[0].getMessage().startsWith("sched_setaffinity(cpu 1023) failed: EINVAL (22): "),
                caught[0].getMessage());
    }
}
