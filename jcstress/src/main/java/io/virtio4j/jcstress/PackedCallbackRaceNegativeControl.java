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
/**
 * {@link CallbackRace} on a packed ring with the store-&gt;load fence removed: must show the lost notification
 * (run only with the fence-omitting {@code Fences} of this module's build; see {@link NegativeControl}). The split
 * variants are {@link CallbackRaceNegativeControl}.
 */
public final class PackedCallbackRaceNegativeControl {
    private PackedCallbackRaceNegativeControl() {
    }

    @JCStressTest
    @Description("NEGATIVE CONTROL (store->load fence removed), packed ring: device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, EVENT_IDX, WEAK")
    @Outcome(id = CallbackRace.LOST_CALL, expect = ACCEPTABLE_INTERESTING, desc = "lost notification: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakEventIdx {
        private final CallbackRace t = new CallbackRace(NegativeControl.require(), RingFormat.PACKED, Ordering.WEAK, true);

        @Actor
        public void device(II_Result r) {
            r.r1 = t.device();
        }

        @Actor
        public void driver(II_Result r) {
            r.r2 = t.driver();
        }
    }

    @JCStressTest
    @Description("NEGATIVE CONTROL (store->load fence removed), packed ring: device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, no EVENT_IDX (flags), WEAK")
    @Outcome(id = CallbackRace.LOST_CALL, expect = ACCEPTABLE_INTERESTING, desc = "lost notification: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakFlags {
        private final CallbackRace t = new CallbackRace(NegativeControl.require(), RingFormat.PACKED, Ordering.WEAK, false);

        @Actor
        public void device(II_Result r) {
            r.r1 = t.device();
        }

        @Actor
        public void driver(II_Result r) {
            r.r2 = t.driver();
        }
    }

    @JCStressTest
    @Description("NEGATIVE CONTROL (store->load fence removed), packed ring: device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, EVENT_IDX, STRONG")
    @Outcome(id = CallbackRace.LOST_CALL, expect = ACCEPTABLE_INTERESTING, desc = "lost notification: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongEventIdx {
        private final CallbackRace t = new CallbackRace(NegativeControl.require(), RingFormat.PACKED, Ordering.STRONG, true);

        @Actor
        public void device(II_Result r) {
            r.r1 = t.device();
        }

        @Actor
        public void driver(II_Result r) {
            r.r2 = t.driver();
        }
    }

    @JCStressTest
    @Description("NEGATIVE CONTROL (store->load fence removed), packed ring: device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, no EVENT_IDX (flags), STRONG")
    @Outcome(id = CallbackRace.LOST_CALL, expect = ACCEPTABLE_INTERESTING, desc = "lost notification: expected here, the store->load fence is removed")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongFlags {
        private final CallbackRace t = new CallbackRace(NegativeControl.require(), RingFormat.PACKED, Ordering.STRONG, false);

        @Actor
        public void device(II_Result r) {
            r.r1 = t.device();
        }

        @Actor
        public void driver(II_Result r) {
            r.r2 = t.driver();
        }
    }
}
