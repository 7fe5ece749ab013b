package io.virtio4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine.TypeConversionException;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code serve blk} reports a bad option by its flag before it listens; sizes read as fio writes them. */
class ServeBlkOptionsTest {
    @TempDir
    Path dir;

    /** Runs {@code serve blk --socket DIR/never.sock args}; returns the exit code and the first line of stderr. */
    private String[] execute(String... args) {
        String[] all = new String[args.length + 4];
        all[0] = "serve";
        all[1] = "blk";
        all[2] = "--socket";
        all[3] = dir.resolve("never.sock").toString();
        System.arraycopy(args, 0, all, 4, args.length);
        String[] r = CliRun.execute(all);
        return new String[] {r[0], r[1].lines().findFirst().orElse("")};
    }

    private void assertRefusedBy(String flag, String... args) {
        String[] r = execute(args);
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith(flag + "="), r[1]);
    }

    @Test
    void badOptionsNameTheirFlag() {
        assertRefusedBy("--queues", "--null", "1G", "--queues", "0");
        assertRefusedBy("--iodepth", "--null", "1G", "--iodepth", "0");
        assertRefusedBy("--block-size", "--null", "1G", "--block-size", "1000");
        assertRefusedBy("--null", "--null", "100");
        assertRefusedBy("--io", "--null", "1G", "--io", "aio");
        assertRefusedBy("--id", "--null", "1G", "--id", "an-id-longer-than-20-bytes");
        assertRefusedBy("--file", "--file", dir.resolve("missing.img").toString());
    }

    @Test
    void aBackingIsRequiredAndOnlyOne() {
        assertEquals("2", execute()[0]);
        assertEquals("2", execute("--null", "1G", "--file", "x")[0]);
    }

    @Test
    void sizesTakeBinarySuffixes() {
        assertEquals(1L << 30, SizeConverter.parse("1G"));
        assertEquals(512L << 20, SizeConverter.parse("512M"));
        assertEquals(4096, SizeConverter.parse("4k"));
        assertEquals(3L << 40, SizeConverter.parse("3TiB"));
        assertEquals(2L << 20, SizeConverter.parse("2MB"));
        assertEquals(1234, SizeConverter.parse("1234"));
        assertThrows(TypeConversionException.class, () -> SizeConverter.parse("-1"));
        assertThrows(TypeConversionException.class, () -> SizeConverter.parse("9999999T"));
        assertThrows(TypeConversionException.class, () -> SizeConverter.parse("G"));
        assertThrows(TypeConversionException.class, () -> SizeConverter.parse("1X"));
    }
}
