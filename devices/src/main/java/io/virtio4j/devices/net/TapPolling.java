package io.virtio4j.devices.net;

import java.util.Locale;

/**
 * How the tap mode watches its tap: the two polling lessons of Linux vhost-net, each switchable so that the old
 * and the new behaviour can both run and be compared.
 *
 * <p>Both are about the tap's wait queue. While anything watches a tap (an epoll registration here, a vhost_poll
 * entry in the kernel), every frame the kernel queues on it walks that wait queue and runs the watcher's
 * callback in the sender's context; once nothing watches, the sender skips all of it.
 *
 * @param rxPollStop true (vhost-net since 2017, "+8.8% pps"): stop watching the tap for readability while
 *                   draining it into the receive ring and watch again only once a read finds it empty; and when
 *                   the receive ring is empty while frames wait, sleep on the guest's receive kick, not on the
 *                   tap (the original patch spun there). false (before): the tap stays watched all the time.
 * @param txPoll     when the tap is watched for writability
 */
public record TapPolling(boolean rxPollStop, TxPoll txPoll) {

    /** When to watch the tap for writability (EPOLLOUT). */
    public enum TxPoll {
        /**
         * vhost-net since 2018 ("+8% more"): only after a write hit EAGAIN, and no more once EPOLLOUT came. A tap
         * nearly always takes a frame, so it is nearly never watched for it, and stopping rx polling then leaves
         * the tap's wait queue empty.
         */
        ON_EAGAIN,
        /**
         * Before: always. The tap stays registered even while rx polling is stopped, and since it is nearly always
         * writable every re-registration reports EPOLLOUT at once: a wake-up with nothing to write.
         */
        ALWAYS;

        public static TxPoll parse(String s) {
            return switch (s.trim().toLowerCase(Locale.ROOT)) {
                case "on-eagain", "on_eagain", "eagain" -> ON_EAGAIN;
                case "always" -> ALWAYS;
                default -> throw new InvalidNetOptionException("txPoll", s, "is not on-eagain | always");
            };
        }

        public String label() {
            return this == ON_EAGAIN ? "on-eagain" : "always";
        }
    }

    public TapPolling {
        if (txPoll == null) {
            throw new InvalidNetOptionException("txPoll", null, "is required");
        }
    }

    /** vhost-net's current discipline: rx polling stopped while draining, tx polled only after EAGAIN. */
    public static TapPolling current() {
        return new TapPolling(true, TxPoll.ON_EAGAIN);
    }

    /** The discipline before both changes: the tap watched for readability and writability all the time. */
    public static TapPolling old() {
        return new TapPolling(false, TxPoll.ALWAYS);
    }

    public String describe() {
        return "rx-poll-stop " + (rxPollStop ? "on" : "off") + ", tx-poll " + txPoll.label();
    }
}
