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
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;
/** {@link KickRace} with the store-&gt;load fence removed: must show the lost kick (run only with
 * the fence-omitting {@code Fences} of this module's build; see {@link NegativeControl}). */
public final class KickRaceNegativeControl {
    private KickRaceNegativeControl() {
    }

    @JCStressTest
    @Description("NEGATIVE CONTROL (store->load fence removed): driver add + kickPrepare vs device enableKicksOrFindPending, EVENT_IDX, WEAK")
    @Outcome(id = KickRace.LOST_KICK, expect = ACCEPTABLE_INTERESTING, desc = "lost kick: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakEventIdx {
        private final KickRace t = new KickRace(NegativeControl.require(), RingFormat.SPLIT, Ordering.WEAK, true);

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
    @Description("NEGATIVE CONTROL (store->load fence removed): driver add + kickPrepare vs device enableKicksOrFindPending, no EVENT_IDX (flags), WEAK")
    @Outcome(id = KickRace.LOST_KICK, expect = ACCEPTABLE_INTERESTING, desc = "lost kick: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakFlags {
        private final KickRace t = new KickRace(NegativeControl.require(), RingFormat.SPLIT, Ordering.WEAK, false);

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
    @Description("NEGATIVE CONTROL (store->load fence removed): driver add + kickPrepare vs device enableKicksOrFindPending, EVENT_IDX, STRONG")
    @Outcome(id = KickRace.LOST_KICK, expect = ACCEPTABLE_INTERESTING, desc = "lost kick: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongEventIdx {
        private final KickRace t = new KickRace(NegativeControl.require(), RingFormat.SPLIT, Ordering.STRONG, true);

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
    @Description("NEGATIVE CONTROL (store->load fence removed): driver add + kickPrepare vs device enableKicksOrFindPending, no EVENT_IDX (flags), STRONG")
    @Outcome(id = KickRace.LOST_KICK, expect = ACCEPTABLE_INTERESTING, desc = "lost kick: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 0", "0, 1", "1, 1"}, expect = ACCEPTABLE, desc = "kick sent, or device sees the buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongFlags {
        private final KickRace t = new KickRace(NegativeControl.require(), RingFormat.SPLIT, Ordering.STRONG, false);

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
