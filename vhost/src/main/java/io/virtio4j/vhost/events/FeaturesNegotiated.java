package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** The back-end accepted SET_FEATURES or SET_PROTOCOL_FEATURES: what was offered and what is now negotiated. */
@Name("io.virtio4j.FeaturesNegotiated")
@Label("Features Negotiated")
@Category({"virtio4j", "vhost-user back-end"})
@Description("A front-end's SET_FEATURES or SET_PROTOCOL_FEATURES was accepted: the bits offered and negotiated")
@StackTrace(false)
public final class FeaturesNegotiated extends Event {
    @Label("Request")
    @Description("SET_FEATURES or SET_PROTOCOL_FEATURES")
    String request;

    @Label("Offered Features")
    @Description("The virtio feature bits the back-end offers (GET_FEATURES)")
    long offeredFeatures;

    @Label("Features")
    @Description("The virtio feature bits negotiated (the last SET_FEATURES accepted, 0 before it)")
    long features;

    @Label("Offered Protocol Features")
    @Description("The vhost-user protocol feature bits the back-end offers (GET_PROTOCOL_FEATURES)")
    long offeredProtocolFeatures;

    @Label("Protocol Features")
    @Description("The vhost-user protocol feature bits negotiated")
    long protocolFeatures;

    /** Control thread, after the request was accepted. */
    public static void emit(String request, long offeredFeatures, long features, long offeredProtocolFeatures,
                            long protocolFeatures) {
        FeaturesNegotiated e = new FeaturesNegotiated();
        if (e.shouldCommit()) {
            e.request = request;
            e.offeredFeatures = offeredFeatures;
            e.features = features;
            e.offeredProtocolFeatures = offeredProtocolFeatures;
            e.protocolFeatures = protocolFeatures;
            e.commit();
        }
    }
}
