/**
 * JFR events (jdk.jfr) of the vhost-user control plane and of rare events: negotiation, memory tables, rings started
 * and stopped, queues broken, front-ends connecting and going, reconnection, inflight resubmission, dirty logging and
 * refused requests. Each is named {@code io.virtio4j.<Thing>} and sits in the category {@code virtio4j}; none is
 * emitted on a per-buffer path.
 *
 * <p>A process that records nothing pays nothing: an event class is an ordinary class until Flight Recorder starts
 * (the JDK instruments event classes only once it runs, until then {@code shouldCommit()} answers false and
 * {@code commit()} is empty), and each {@code emit} method fills fields only after {@code shouldCommit()} said yes,
 * so no string is built and nothing is looked up for a recording that is not there. Loading an event class does
 * not start Flight Recorder either ({@code EventType.getEventType} would, which is why nothing here calls it).
 *
 * <p>Turn them on for the command line with {@code VIRTIO4J_JAVA_OPTS=-XX:StartFlightRecording:filename=FILE.jfr}
 * (the launcher passes it to the JVM); a program that uses the library starts a {@code jdk.jfr.Recording} or runs
 * with the same JVM option.
 */
package io.virtio4j.vhost.events;
