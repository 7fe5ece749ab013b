package io.virtio4j.jcstress;

import io.virtio4j.core.layout.RingFormat;
import io.virtio4j.core.ordering.Ordering;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/** {@link UsedPublish} for both orderings. */
public final class UsedPublishTest {
    private UsedPublishTest() {
    }

    @JCStressTest
    @Description("Device writes the reply payload, pushUsed + publishUsed, WEAK ordering; driver pollUsed")
    @Outcome(id = UsedPublish.EMPTY, expect = ACCEPTABLE, desc = "driver ran first: nothing used")
    @Outcome(id = UsedPublish.SEEN, expect = ACCEPTABLE, desc = "driver sees the right token, length and reply payload")
    @Outcome(expect = FORBIDDEN, desc = "used.idx seen with a stale used element or payload")
    @State
    public static class Weak {
        private final UsedPublish t = new UsedPublish(RingFormat.SPLIT, Ordering.WEAK);

        @Actor
        public void device() {
            t.device();
        }

        @Actor
        public void driver(III_Result r) {
            t.driver(r);
        }
    }

    @JCStressTest
    @Description("Device writes the reply payload, pushUsed + publishUsed, STRONG ordering; driver pollUsed")
    @Outcome(id = UsedPublish.EMPTY, expect = ACCEPTABLE, desc = "driver ran first: nothing used")
    @Outcome(id = UsedPublish.SEEN, expect = ACCEPTABLE, desc = "driver sees the right token, length and reply payload")
    @Outcome(expect = FORBIDDEN, desc = "used.idx seen with a stale used element or payload")
    @State
    public static class Strong {
        private final UsedPublish t = new UsedPublish(RingFormat.SPLIT, Ordering.STRONG);

        @Actor
        public void device() {
            t.device();
        }

        @Actor
        public void driver(III_Result r) {
            t.driver(r);
        }
    }
}
