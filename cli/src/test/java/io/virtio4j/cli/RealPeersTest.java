package io.virtio4j.cli;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code serve net} against real peers, through {@code peers/selftest.sh}: DPDK testpmd's virtio-user driver
 * (txonly into rxonly, exact frames through macswap, 1500-byte frames through loopback on a packed ring...) and
 * a real Linux guest under QEMU (ping and pktgen, rxonly and macswap, split and packed rings), and {@code drive net},
 * our front-end, against DPDK's own back-end (split, packed with IN_ORDER). Every check compares the counters of
 * both sides exactly. The peers are installed by {@code peers/install.sh}, which {@code ./virtio4j test} runs
 * first (as root).
 */
class RealPeersTest {

    @Test
    void serveNetPassesEveryExactCounterCheckAgainstDpdkAndALinuxGuest() throws IOException, InterruptedException {
        Path root = Path.of("").toAbsolutePath().getParent();
        Path selftest = root.resolve("peers/selftest.sh");
        assertTrue(Files.isExecutable(selftest), "missing " + selftest);
        String java = ProcessHandle.current().info().command().orElseThrow();
        String cli = java + " --enable-native-access=ALL-UNNAMED -cp " + System.getProperty("java.class.path")
                + " " + Main.class.getName();
        String backend = cli + " serve net --socket {sock} --mode {mode}";
        String driver = cli + " drive net --socket {sock}";
        Path log = Files.createTempFile("virtio4j-selftest", ".log");
        Process p = new ProcessBuilder(List.of("bash", selftest.toString(), "--backend", backend, "--driver", driver))
                .directory(root.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        if (!p.waitFor(20, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            fail("selftest did not finish within 20 minutes; log:\n" + Files.readString(log));
        }
        String out = Files.readString(log);
        System.out.println(out);
        if (out.contains("dpdk-testpmd: command not found") || out.contains("run peers/install.sh")) {
            fail("the real peers are not installed: run peers/install.sh as root (./virtio4j test does)\n" + out);
        }
        assertEquals(0, p.exitValue(), "selftest failed:\n" + out);
        assertTrue(out.lines().anyMatch(l -> l.matches("selftest: [1-9][0-9]* passed, 0 failed")), out);
        Files.deleteIfExists(log);
    }
}
