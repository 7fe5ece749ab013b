package io.virtio4j.core.layout;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rings' 16-bit release stores, and the inflight regions' 8- and 16-bit ones, survive a SIGBUS (guest memory whose file a front-end shrank): the JVM raises its
 * InternalError, which a queue thread catches, instead of crashing. Run in a child JVM with -Xint, where JDK 25's
 * interpreted Unsafe.putShortVolatile (behind a 16-bit setRelease) crashes the JVM in its signal handler: see
 * {@code Le.setU16Release}. Interpreted because that is where the crash is; compiled code handles the fault.
 */
class RingStoresOnFaultingMemoryTest {
    private static final String FAULT = "a fault occurred in an unsafe memory access operation";

    @Test
    void everyRingReleaseStoreOnTruncatedMemoryRaisesTheInternalErrorAndTheJvmLives() throws Exception {
        Path log = Files.createTempFile("faulting-ring-stores", ".log");
        try {
            String java = ProcessHandle.current().info().command().orElseThrow();
            Process child = new ProcessBuilder(List.of(java, "-Xint", "-XX:-CreateCoredumpOnCrash",
                    "-XX:ErrorFile=" + log + ".hs_err", "--enable-native-access=ALL-UNNAMED",
                    "-cp", System.getProperty("java.class.path"), FaultingRingStoresChild.class.getName()))
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            assertTrue(child.waitFor(120, TimeUnit.SECONDS), "the child did not end"); // a hang guard
            String out = Files.readString(log);
            assertEquals(0, child.exitValue(), "the child JVM died:\n" + out);
            for (String store : List.of("used.idx", "used.flags", "avail_event", "avail.idx", "avail.flags", "packed flags",
                    "inflight u8", "inflight u16", "split inflight publication", "packed inflight publication")) {
                assertTrue(out.contains(store + ": " + FAULT), store + " did not raise the fault's InternalError:\n" + out);
            }
            assertTrue(out.contains("done"), out);
        } finally {
            Files.deleteIfExists(log);
            Files.deleteIfExists(Path.of(log + ".hs_err"));
        }
    }
}
