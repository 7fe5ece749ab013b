package io.virtio4j.core.notify;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/** In-process {@link Notifier}: a pending flag plus park/unpark of the single waiting thread. */
public final class ParkingNotifier implements Notifier {
    private static final VarHandle PENDING;

    static {
        try {
            PENDING = MethodHandles.lookup().findVarHandle(ParkingNotifier.class, "pending", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through PENDING
    private volatile int pending;
    private volatile Thread waiter;

    @Override
    public void signal() {
        // Dekker pair with await(): we store pending (volatile) then load waiter; the waiter stores waiter
        // then loads pending. Sequential consistency of volatile accesses means at least one side sees the
        // other's store: either the waiter sees pending and does not park, or we see the waiter and unpark it.
        if ((int) PENDING.getAndSet(this, 1) == 0) {
            Thread w = waiter;
            if (w != null) {
                LockSupport.unpark(w);
            }
        }
    }

    @Override
    public boolean await(long timeoutNanos) throws InterruptedException {
        waiter = Thread.currentThread();
        try {
            long deadline = System.nanoTime() + timeoutNanos;
            while (true) {
                if ((int) PENDING.getAndSet(this, 0) == 1) {
                    return true;
                }
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                LockSupport.parkNanos(this, left);
            }
        } finally {
            waiter = null;
        }
    }
}
