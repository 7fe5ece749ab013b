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
/** {@link CallbackRace}: both orderings, with and without EVENT_IDX. (0, 1) is forbidden. */
public final class CallbackRaceTest {
    private CallbackRaceTest() {
    }

    @JCStressTest
    @Description("Device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, EVENT_IDX, WEAK ordering")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(id = CallbackRace.LOST_CALL, expect = FORBIDDEN, desc = "lost notification: no notification and the driver sleeps with a used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakEventIdx {
        private final CallbackRace t = new CallbackRace(RingFormat.SPLIT, Ordering.WEAK, true);

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
    @Description("Device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, no EVENT_IDX (flags), WEAK ordering")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(id = CallbackRace.LOST_CALL, expect = FORBIDDEN, desc = "lost notification: no notification and the driver sleeps with a used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class WeakFlags {
        private final CallbackRace t = new CallbackRace(RingFormat.SPLIT, Ordering.WEAK, false);

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
    @Description("Device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, EVENT_IDX, STRONG ordering")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(id = CallbackRace.LOST_CALL, expect = FORBIDDEN, desc = "lost notification: no notification and the driver sleeps with a used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongEventIdx {
        private final CallbackRace t = new CallbackRace(RingFormat.SPLIT, Ordering.STRONG, true);

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
    @Description("Device pushUsed + publishUsed + needNotify vs driver enableCallbacksOrFindPending, no EVENT_IDX (flags), STRONG ordering")
    @Outcome(id = {"1, 1", "1, 0", "0, 0"}, expect = ACCEPTABLE, desc = "notification sent, or driver sees the used buffer")
    @Outcome(id = CallbackRace.LOST_CALL, expect = FORBIDDEN, desc = "lost notification: no notification and the driver sleeps with a used buffer")
    @Outcome(expect = FORBIDDEN, desc = "not a possible outcome")
    @State
    public static class StrongFlags {
        private final CallbackRace t = new CallbackRace(RingFormat.SPLIT, Ordering.STRONG, false);

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
