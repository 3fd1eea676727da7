internal import CAvahi

// C entry points handed to libavahi-client. Each one recovers the `AvahiDiscovery` from its
// userdata pointer, copies every string and list out of Avahi's memory (which is only valid
// during the call) and forwards Swift values. They run on Avahi's thread with its lock held.

private func discovery(from userdata: UnsafeMutableRawPointer?) -> AvahiDiscovery? {
    guard let userdata else {
        return nil
    }
    let discovery = Unmanaged<AvahiDiscovery>.fromOpaque(userdata).takeUnretainedValue()
    discovery.enteredCallback()
    return discovery
}

private func copyString(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}

func reconnectTimerFired(_ timeout: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?) {
    discovery(from: userdata)?.reconnect()
}

func clientStateCallback(
    _ client: OpaquePointer?, _ state: AvahiClientState,
    _ userdata: UnsafeMutableRawPointer?
) {
    guard let client, let discovery = discovery(from: userdata) else {
        return
    }
    discovery.clientStateChanged(client, state)
}

func entryGroupCallback(
    _ group: OpaquePointer?, _ state: AvahiEntryGroupState,
    _ userdata: UnsafeMutableRawPointer?
) {
    guard let group, let discovery = discovery(from: userdata) else {
        return
    }
    discovery.entryGroupStateChanged(group, state)
}

func serviceBrowserCallback(
    _ browser: OpaquePointer?, _ interface: AvahiIfIndex, _ family: AvahiProtocol,
    _ event: AvahiBrowserEvent, _ name: UnsafePointer<CChar>?,
    _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    guard let browser, let discovery = discovery(from: userdata) else {
        return
    }
    discovery.browserEvent(
        browser, interface: interface, protocol: family, event: event,
        name: copyString(name), type: copyString(type), domain: copyString(domain))
}

func serviceResolverCallback(
    _ resolver: OpaquePointer?, _ interface: AvahiIfIndex, _ family: AvahiProtocol,
    _ event: AvahiResolverEvent, _ name: UnsafePointer<CChar>?,
    _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ hostName: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?,
    _ port: UInt16, _ txt: UnsafeMutablePointer<AvahiStringList>?,
    _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    guard let resolver, let discovery = discovery(from: userdata) else {
        return
    }
    var service: ResolvedService?
    if event == AVAHI_RESOLVER_FOUND, let name, let type, let domain, let hostName, let address {
        service = ResolvedService(
            name: String(cString: name), type: String(cString: type), domain: String(cString: domain),
            hostName: String(cString: hostName), address: AvahiText.numericAddress(address), port: port,
            txt: TXTRecord.decode(AvahiText.entries(of: txt)), interfaceIndex: interface)
    }
    discovery.resolverEvent(resolver, event: event, service: service)
}
