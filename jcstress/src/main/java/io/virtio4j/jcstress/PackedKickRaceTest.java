package io.virtio4j.jcstress;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;
/**
 * {@link KickRace} on a packed ring: both orderings, with and without EVENT_IDX (DESC or ENABLE/DISABLE event
 * suppression). (0, 0) is forbidden. The split variants are {@link KickRaceTest}.
 */
public final class PackedKickRaceTest {
    private PackedKickRaceTest() {
    }

    @JCStressTest
    @Description("Packed ring: Driver add + kickPrepare vs device enableKicksOrFindPending, EVENT_IDX, WEAK ordering")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(id = KickRace.LOST_KICK, expect = FORBIDDEN, desc = "lost kick: no kick and the device sleeps with a buffer available")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakEventIdx {
        private final KickRace t = new KickRace(RingFormat.PACKED, Ordering.WEAK, true);

        @Actor
        public void driver(II_Result r) {
            r.r1 = t.driver();
        }

        @Actor
        public void device(II_Result r) {
            r.r2 = t.device();
        }
    }

    @JCStressTest
    @Description("Packed ring: Driver add + kickPrepare vs device enableKicksOrFindPending, no EVENT_IDX (flags), WEAK ordering")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(id = KickRace.LOST_KICK, expect = FORBIDDEN, desc = "lost kick: no kick and the device sleeps with a buffer available")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakFlags {
        private final KickRace t = new KickRace(RingFormat.PACKED, Ordering.WEAK, false);

        @Actor
        public void driver(II_Result r) {
            r.r1 = t.driver();
        }

        @Actor
        public void device(II_Result r) {
            r.r2 = t.device();
        }
    }

    @JCStressTest
    @Description("Packed ring: Driver add + kickPrepare vs device enableKicksOrFindPending, EVENT_IDX, STRONG ordering")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(id = KickRace.LOST_KICK, expect = FORBIDDEN, desc = "lost kick: no kick and the device sleeps with a buffer available")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongEventIdx {
        private final KickRace t = new KickRace(RingFormat.PACKED, Ordering.STRONG, true);

        @Actor
        public void driver(II_Result r) {
            r.r1 = t.driver();
        }

        @Actor
        public void device(II_Result r) {
            r.r2 = t.device();
        }
    }

    @JCStressTest
    @Description("Packed ring: Driver add + kickPrepare vs device enableKicksOrFindPending, no EVENT_IDX (flags), STRONG ordering")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(id = KickRace.LOST_KICK, expect = FORBIDDEN, desc = "lost kick: no kick and the device sleeps with a buffer available")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongFlags {
        private final KickRace t = new KickRace(RingFormat.PACKED, Ordering.STRONG, false);

        @Actor
        public void driver(II_Result r) {
            r.r1 = t.driver();
        }

        @Actor
        public void device(II_Result r) {
            r.r2 = t.device();
        }
    }
}
