/**
 * JFR events (jdk.jfr) of the vhost-user control plane and of rare events: negotiation, memory tables, rings started
 * and stopped, queues broken, front-ends connecting and going, reconnection, inflight resubmission, dirty logging and
 * refused requests. Each is named {@code io.virtio4j.<Thing>} and sits in the category {@code virtio4j}; none is
 * emitted on a per-buffer path.
 *
 * <p>A process that records nothing pays nothing: until the first recording starts, Flight Recorder is not
 * initialised (no recorder thread, no buffers) and an event class is the uninstrumented one, whose
 * {@code shouldCommit()} answers false and whose {@code commit()} is empty; loading an event class starts nothing
 * (JDK 25: neither does registering it). Each {@code emit} method fills fields only after {@code shouldCommit()}
 * said yes, so no string is built and nothing is looked up for a recording that is not there; a recording started
 * later has the JDK instrument the classes already loaded, and their events are recorded from then on.
 *
 * <p>Turn them on for the command line with {@code VIRTIO4J_JAVA_OPTS=-XX:StartFlightRecording:filename=FILE.jfr}
 * (the launcher passes it to the JVM); a program that uses the library starts a {@code jdk.jfr.Recording} or runs
 * with the same JVM option.
 */
package io.virtio4j.vhost.events;
