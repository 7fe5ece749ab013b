package io.virtio4j.cli;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** drive blk --verify's block: each way a block can be wrong is told apart. */
class BlockPatternTest {
    private final BlockPattern pattern = new BlockPattern();

    private ByteBuffer filled(int bytes, long offset, long run, long generation) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes);
        pattern.fill(b, bytes, offset, run, generation);
        return b;
    }

    @ParameterizedTest
    @ValueSource(ints = {512, 4096, 131072})
    void aBlockReadBackAsWrittenVerifies(int bytes) {
        ByteBuffer b = filled(bytes, 7L * bytes, 42, 3);
        assertEquals(BlockPattern.Verdict.OK, pattern.check(b, bytes, 7L * bytes, 42, 3));
        assertEquals(BlockPattern.Verdict.OK, pattern.check(b, bytes, 7L * bytes, 99, BlockPattern.ANY_GENERATION));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 8, 16, 24, 32, 39, 40, 41, 4095})
    void anyFlippedBitIsCaught(int at) {
        ByteBuffer b = filled(4096, 4096, 42, 3);
        b.put(at, (byte) (b.get(at) ^ 0x10));
        BlockPattern.Verdict expected = at < 8 ? BlockPattern.Verdict.BAD_MAGIC : BlockPattern.Verdict.BAD_CRC;
        assertEquals(expected, pattern.check(b, 4096, 4096, 42, 3));
    }

    @ParameterizedTest
    @ValueSource(strings = {"offset", "run", "generation", "zeros"})
    void aMisdirectedStaleOrMissingBlockIsToldApart(String what) {
        ByteBuffer b = switch (what) {
            case "offset" -> filled(4096, 8192, 42, 3); // written to another block's place
            case "run" -> filled(4096, 4096, 41, 3); // an earlier run's
            case "generation" -> filled(4096, 4096, 42, 2); // this run's previous write of the block
            default -> ByteBuffer.allocateDirect(4096); // never written, or discarded
        };
        BlockPattern.Verdict expected = switch (what) {
            case "offset" -> BlockPattern.Verdict.WRONG_OFFSET;
            case "run" -> BlockPattern.Verdict.WRONG_RUN;
            case "generation" -> BlockPattern.Verdict.WRONG_GENERATION;
            default -> BlockPattern.Verdict.BAD_MAGIC;
        };
        assertEquals(expected, pattern.check(b, 4096, 4096, 42, 3));
    }
}
